/* test_rttm.c — RTTM reading (the fixtures' RTTM, the audio sample's
 * reference), writing round trip, JSON form, malformed lines. */
#include "common/error.h"
#include "common/log.h"
#include "worker/diar/rttm.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_read_fixture(void **state)
{
    (void)state;
    gf_rttm *r = NULL;
    assert_int_equal(gf_rttm_read("../shared/data/fixtures/community-1/pipeline_expected.rttm", &r), 0);
    assert_int_equal(r->n, 7);
    assert_string_equal(r->turns[0].uri, "pipeline");
    assert_int_equal(r->turns[0].channel, 1);
    assert_true(fabs(r->turns[0].start - 0.030969) < 1e-12);
    assert_true(fabs(r->turns[0].duration - 9.770625) < 1e-12);
    assert_string_equal(r->turns[6].speaker, "SPEAKER_00");
    gf_rttm_destroy(&r);
    assert_int_equal(gf_rttm_read("../shared/data/audio/sample.rttm", &r), 0);
    assert_int_equal(r->n, 10);
    gf_rttm_destroy(&r);
}

static void test_write_read_roundtrip_and_json(void **state)
{
    (void)state;
    gf_rttm *r = gf_rttm_new();
    gf_rttm_add(r, "rec", 1, 3.5, 1.25, "B");
    gf_rttm_add(r, "rec", 1, 0.123456, 2.0, "A \"q\"");
    gf_rttm_sort(r);
    assert_string_equal(r->turns[0].speaker, "A \"q\"");
    char *txt = gf_rttm_format(r);
    char path[] = "/tmp/gf_rttm_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    assert_int_equal(gf_rttm_write_text(path, txt), 0);
    gf_rttm *back = NULL;
    /* a label with spaces does not survive RTTM: only the first word */
    assert_int_equal(gf_rttm_read(path, &back), 0);
    assert_int_equal(back->n, 2);
    assert_true(fabs(back->turns[0].start - 0.123456) < 1e-9);
    assert_true(fabs(back->turns[1].duration - 1.25) < 1e-9);
    assert_string_equal(back->turns[1].speaker, "B");
    char *js = gf_rttm_json(r);
    json_object *o = json_tokener_parse(js);
    assert_non_null(o);
    json_object *turns, *spk;
    assert_true(json_object_object_get_ex(o, "turns", &turns));
    assert_int_equal(json_object_array_length(turns), 2);
    json_object *t1 = json_object_array_get_idx(turns, 1), *end, *name;
    assert_true(json_object_object_get_ex(t1, "end", &end));
    assert_true(fabs(json_object_get_double(end) - 4.75) < 1e-9);
    assert_true(json_object_object_get_ex(json_object_array_get_idx(turns, 0), "speaker", &name));
    assert_string_equal(json_object_get_string(name), "A \"q\"");
    assert_true(json_object_object_get_ex(o, "speakers", &spk));
    assert_int_equal(json_object_array_length(spk), 2);
    json_object_put(o);
    free(js);
    free(txt);
    unlink(path);
    gf_rttm_destroy(&back);
    gf_rttm_destroy(&r);
}

static void test_malformed(void **state)
{
    (void)state;
    gf_log_init("test_rttm", GF_LOG_ERROR);
    gf_rttm *r = NULL;
    const char *ok = "# comment\n\nSPKR-INFO x 1 <NA> <NA> <NA> unknown A <NA> <NA>\n"
                     "SPEAKER x 1 0.5 1.0 <NA> <NA> A <NA> <NA>\r\n";
    assert_int_equal(gf_rttm_parse("ok", ok, strlen(ok), &r), 0);
    assert_int_equal(r->n, 1);
    gf_rttm_destroy(&r);
    const char *bad[] = {
        "SPEAKER x 1 0.5\n",
        "SPEAKER x 1 abc 1.0 <NA> <NA> A <NA> <NA>\n",
        "SPEAKER x 1 0.5 -1 <NA> <NA> A <NA> <NA>\n",
        "SPEAKER x 1 0.5 nan <NA> <NA> A <NA> <NA>\n",
        "SPEAKER x one 0.5 1 <NA> <NA> A <NA> <NA>\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gf_rttm_parse("bad", bad[i], strlen(bad[i]), &r), GF_EINVAL);
        assert_null(r);
    }
    assert_int_equal(gf_rttm_read("/nonexistent/x.rttm", &r), GF_ENOENT);
}

/* Mutated RTTM text: an error or a list of sane turns, never a crash. */
static void test_mutations_never_crash(void **state)
{
    (void)state;
    gf_log_level saved = gf_log_get_level();
    gf_log_init("test_rttm", GF_LOG_OFF);
    const char *src = "SPEAKER rec 1 0.500 1.250 <NA> <NA> A <NA> <NA>\n"
                      "SPEAKER rec 1 2.000 0.750 <NA> <NA> B <NA> <NA>\n";
    size_t len = strlen(src);
    char buf[256];
    srand(77);
    for (int it = 0; it < 5000; it++) {
        memcpy(buf, src, len);
        for (int k = 0; k < 1 + rand() % 3; k++)
            buf[(size_t)rand() % len] = (char)(rand() % 256);
        gf_rttm *r = NULL;
        if (gf_rttm_parse("mutant", buf, (size_t)rand() % (len + 1), &r) == 0) {
            for (size_t i = 0; i < r->n; i++)
                assert_true(r->turns[i].duration >= 0 && isfinite(r->turns[i].start));
            gf_rttm_destroy(&r);
        }
        assert_null(r);
    }
    gf_log_init("test_rttm", saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_fixture),
        cmocka_unit_test(test_write_read_roundtrip_and_json),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_mutations_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
