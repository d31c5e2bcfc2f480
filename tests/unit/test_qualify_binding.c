/* test_qualify_binding.c — the binding gpuflock qualify writes
 * (gf_qualify_write_binding) reads back as YAML with every pinned value
 * intact, including values that hold ", " and ": " (a pin naming each math
 * mode's kernel), and leaves out the entries that did not win. No card: the
 * entries are made here. */
#include "qualify/qualify.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static const gf_pin pins[] = {
    { "tile_m", "fp32 32/16/8, tf32 64/16" },
    { "stages", "fp32 2, tf32 2 (halves of K)" },
    { "split_k", "a: b" },
    { "threads", "128" },
};

/* The scalar values of every `config` mapping in the YAML text, in order. */
static size_t config_values(const char *text, char out[][64], size_t max)
{
    yaml_parser_t p;
    yaml_event_t ev;
    size_t n = 0;
    int depth = -1, level = 0;   /* depth: the level of the config mapping, -1 outside */
    bool key = true, next_is_config = false, done = false;
    assert_true(yaml_parser_initialize(&p));
    yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
    while (!done) {
        assert_true(yaml_parser_parse(&p, &ev));
        switch (ev.type) {
        case YAML_MAPPING_START_EVENT:
            level++;
            if (next_is_config)
                depth = level, key = true;
            next_is_config = false;
            break;
        case YAML_MAPPING_END_EVENT:
            if (level == depth)
                depth = -1;
            level--;
            break;
        case YAML_SCALAR_EVENT: {
            const char *v = (const char *)ev.data.scalar.value;
            if (depth == level) {
                if (!key && n < max)
                    snprintf(out[n++], 64, "%s", v);
                key = !key;
            } else {
                next_is_config = strcmp(v, "config") == 0;
            }
            break;
        }
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return n;
}

static void test_values_survive(void **state)
{
    (void)state;
    gf_candidate cand = { "dense", "dense.linear0", pins, sizeof pins / sizeof pins[0] };
    gf_card_identity card = { 0 };
    snprintf(card.name, sizeof card.name, "NVIDIA H200");
    card.cc_major = 9;
    card.sm_count = 132;
    gf_qualify_entry e[3] = { { &cand, 32, GF_MATH_TF32, { 0 } },
                              { &cand, 8, GF_MATH_FP32, { 0 } },
                              { &cand, 1, GF_MATH_FP32, { 0 } } };
    for (int i = 0; i < 3; i++) {
        e[i].result.win = i != 1;   /* the batch-8 entry lost */
        snprintf(e[i].result.module.sha256, sizeof e[i].result.module.sha256, "%064d", 7);
        e[i].result.module.tier = 90;
        snprintf(e[i].result.accuracy, sizeof e[i].result.accuracy, "%064d", 1);
        snprintf(e[i].result.speed, sizeof e[i].result.speed, "%064d", 2);
        snprintf(e[i].result.end_to_end, sizeof e[i].result.end_to_end, "%064d", 3);
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    fputs("bindings:\n", f);
    assert_int_equal(gf_qualify_write_binding(f, &card, e, 3), 2);
    fclose(f);
    char got[16][64];
    size_t n = config_values(text, got, 16);
    assert_int_equal(n, 2 * (sizeof pins / sizeof pins[0]));
    for (size_t i = 0; i < n; i++)
        assert_string_equal(got[i], pins[i % (sizeof pins / sizeof pins[0])].value);
    assert_null(strstr(text, "batch: 8"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_survive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
