/* test_ydoc.c — the YAML reader the configuration and the evidence tables
 * share: the bounded load (size, nesting, one document, syntax errors with
 * their lines) and the walk of a mapping against a table of allowed names
 * (a list of names or an array of structs led by the name). */
#include "common/error.h"
#include "common/ydoc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int load(const char *text, size_t max_bytes, int max_depth, yaml_document_t *doc,
                gf_ydoc_error *err)
{
    return gf_ydoc_load(text, strlen(text), max_bytes, max_depth, doc, err);
}

static void test_load_one_document_within_bounds(void **state)
{
    (void)state;
    yaml_document_t doc;
    gf_ydoc_error err;
    assert_int_equal(load("a: 1\nb: [x, y]\n", 64, 4, &doc, &err), 0);
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    assert_int_equal(gf_ydoc_len(root), 2);
    yaml_node_t *b = gf_ydoc_get(&doc, root, "b");
    assert_int_equal(gf_ydoc_line(b), 2);
    assert_int_equal(gf_ydoc_len(b), 2);
    assert_string_equal(gf_ydoc_type_name(b), "a list");
    assert_string_equal(gf_ydoc_scalar(gf_ydoc_get(&doc, root, "a")), "1");
    assert_null(gf_ydoc_get(&doc, root, "c"));
    assert_null(gf_ydoc_scalar(b));
    yaml_document_delete(&doc);

    assert_int_equal(load("a: 1\n", 4, 0, &doc, &err), GF_EINVAL);
    assert_int_equal(err.status, GF_YDOC_TOO_BIG);
    /* Flow nesting past the bound is refused before the document is built. */
    assert_int_equal(load("a: [[[[[1]]]]]\n", 0, 4, &doc, &err), GF_EINVAL);
    assert_int_equal(err.status, GF_YDOC_TOO_DEEP);
    assert_int_equal(err.line, 1);
    assert_int_equal(load("a: [[[1]]]\n", 0, 4, &doc, &err), 0);
    yaml_document_delete(&doc);
    assert_int_equal(load("a: 1\n---\nb: 2\n", 0, 0, &doc, &err), GF_EINVAL);
    assert_int_equal(err.status, GF_YDOC_SECOND_DOC);
    assert_int_equal(err.line, 3);
    assert_int_equal(load("a: 1\nb: [\n", 0, 0, &doc, &err), GF_EINVAL);
    assert_int_equal(err.status, GF_YDOC_SYNTAX);
    assert_true(err.line >= 2);
    assert_true(err.problem[0] != '\0');
}

static void test_nulls_and_type_names(void **state)
{
    (void)state;
    yaml_document_t doc;
    gf_ydoc_error err;
    assert_int_equal(load("a: ~\nb: null\nc:\nd: 'null'\ne: {x: 1}\n", 0, 0, &doc, &err), 0);
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    assert_true(gf_ydoc_is_null(gf_ydoc_get(&doc, root, "a")));
    assert_true(gf_ydoc_is_null(gf_ydoc_get(&doc, root, "b")));
    assert_true(gf_ydoc_is_null(gf_ydoc_get(&doc, root, "c")));
    assert_false(gf_ydoc_is_null(gf_ydoc_get(&doc, root, "d")));   /* quoted: a string */
    assert_string_equal(gf_ydoc_type_name(gf_ydoc_get(&doc, root, "d")), "a scalar");
    assert_string_equal(gf_ydoc_type_name(gf_ydoc_get(&doc, root, "a")), "null");
    assert_string_equal(gf_ydoc_type_name(gf_ydoc_get(&doc, root, "e")), "a mapping");
    assert_int_equal(gf_ydoc_line(NULL), 0);
    yaml_document_delete(&doc);
}

/* What the walk reported, pair by pair. */
typedef struct {
    char seen[8][64];
    int n;
    int stop_at;               /* stop the walk at this pair (-1: never) */
} walk_log;

static int note(void *ctx, const gf_ydoc_pair *p)
{
    walk_log *w = ctx;
    snprintf(w->seen[w->n], sizeof w->seen[w->n], "%s field %ld first %zu",
             p->name ? p->name : "(not plain)", p->field, p->first_line);
    return w->n++ == w->stop_at ? 7 : 0;
}

typedef struct {
    const char *name;          /* leads, as the walk needs */
    int width;                 /* anything else */
} named_field;

static void test_walk_against_a_table(void **state)
{
    (void)state;
    yaml_document_t doc;
    gf_ydoc_error err;
    assert_int_equal(load("kind: a\nsize: 1\ncolour: red\nkind: b\n[x]: 1\n", 0, 0, &doc, &err),
                     0);
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    static const char *const names[] = { "kind", "size", NULL };
    walk_log w = { .stop_at = -1 };
    assert_int_equal(gf_ydoc_walk(&doc, root, names, sizeof *names, note, &w), 0);
    assert_int_equal(w.n, 5);
    assert_string_equal(w.seen[0], "kind field 0 first 0");
    assert_string_equal(w.seen[1], "size field 1 first 0");
    assert_string_equal(w.seen[2], "colour field -1 first 0");
    assert_string_equal(w.seen[3], "kind field 0 first 1");   /* given twice: its first line */
    assert_string_equal(w.seen[4], "(not plain) field -1 first 0");
    /* A table of structs led by their names; a nonzero return stops. */
    static const named_field fields[] = { { "size", 4 }, { "colour", 8 }, { NULL, 0 } };
    walk_log v = { .stop_at = 2 };
    assert_int_equal(gf_ydoc_walk(&doc, root, fields, sizeof *fields, note, &v), 7);
    assert_int_equal(v.n, 3);
    assert_string_equal(v.seen[1], "size field 0 first 0");
    assert_string_equal(v.seen[2], "colour field 1 first 0");
    yaml_document_delete(&doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_one_document_within_bounds),
        cmocka_unit_test(test_nulls_and_type_names),
        cmocka_unit_test(test_walk_against_a_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
