/* test_rttm.c — RTTM reading (the fixtures' RTTM, the audio sample's
 * reference), writing round trip, JSON form, malformed lines, times out of
 * range, binary input, files with no SPEAKER record. */
#include "common/error.h"
#include "common/log.h"
#include "diar/io/rttm.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    char dir[256];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-test-rttm"), 0);
    char *path = gf_strfmt("%s/round.rttm", dir);
    assert_int_equal(gf_rttm_write_text(path, txt, true), 0);
    gf_rttm *back = NULL;
    /* a label with spaces does not survive RTTM: only the first word */
    assert_int_equal(gf_rttm_read(path, &back), 0);
    assert_int_equal(back->n, 2);
    assert_true(fabs(back->turns[0].start - 0.123456) < 1e-9);
    assert_true(fabs(back->turns[1].duration - 1.25) < 1e-9);
    assert_string_equal(back->turns[1].speaker, "B");
    /* overlap flags: B [3.5, 4.75) against A [0.123456, 2.123456): none;
     * C over A's end: both flagged, B not */
    gf_rttm *r2 = gf_rttm_new();
    gf_rttm_add(r2, "rec", 1, 3.5, 1.25, "B");
    gf_rttm_add(r2, "rec", 1, 0.123456, 2.0, "A");
    gf_rttm_add(r2, "rec", 1, 2.0, 1.0, "C");
    char *jo = gf_rttm_json(r2);
    json_object *oo = json_tokener_parse(jo), *ot, *fl;
    assert_true(json_object_object_get_ex(oo, "turns", &ot));
    for (size_t i = 0; i < json_object_array_length(ot); i++) {
        json_object *t = json_object_array_get_idx(ot, i), *sp;
        assert_true(json_object_object_get_ex(t, "overlap", &fl));
        assert_true(json_object_object_get_ex(t, "speaker", &sp));
        bool want = strcmp(json_object_get_string(sp), "B") != 0;
        assert_int_equal(json_object_get_boolean(fl), want);
    }
    json_object_put(oo);
    free(jo);
    gf_rttm_destroy(&r2);
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
    gf_test_rmtree(dir);
    free(path);
    gf_rttm_destroy(&back);
    gf_rttm_destroy(&r);
}

/* replace false: an existing file, a dangling link or a folder at the name
 * is left as it is (GF_EEXIST, no temporary file left); a free name gets
 * the whole text; replace true goes over a file but never through a link
 * planted at the temporary name. */
static void test_no_replace(void **state)
{
    (void)state;
    gf_log_init("test_rttm", GF_LOG_ERROR);
    char dir[256];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-test-rttm"), 0);
    char *mine = gf_strfmt("%s/reference.rttm", dir);
    FILE *f = fopen(mine, "w");
    assert_non_null(f);
    fputs("theirs\n", f);
    fclose(f);
    gf_log_clear_last_error();
    assert_int_equal(gf_rttm_write_text(mine, "ours\n", false), GF_EEXIST);
    assert_non_null(strstr(gf_log_last_error(), "exists: not replaced"));
    char buf[64] = "";
    f = fopen(mine, "r");
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "theirs\n");
    char *link = gf_strfmt("%s/dangling.rttm", dir);
    assert_int_equal(symlink("/nonexistent/target", link), 0);
    assert_int_equal(gf_rttm_write_text(link, "ours\n", false), GF_EEXIST);
    char *sub = gf_strfmt("%s/sub", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(gf_rttm_write_text(sub, "ours\n", false), GF_EEXIST);
    char *fresh = gf_strfmt("%s/new.rttm", dir);
    assert_int_equal(gf_rttm_write_text(fresh, "ours\n", false), 0);
    f = fopen(fresh, "r");
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "ours\n");
    /* a link planted at the temporary name: the write fails, the target
     * is untouched */
    char *tmp = gf_strfmt("%s.tmp.%d.%d", fresh, (int)getpid(), (int)gettid());
    assert_int_equal(symlink(mine, tmp), 0);
    assert_int_not_equal(gf_rttm_write_text(fresh, "again\n", true), 0);
    f = fopen(mine, "r");
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "theirs\n");
    unlink(tmp);
    /* nothing but what was made: the two files, the link, the folder */
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += de->d_name[0] != '.';
    closedir(d);
    assert_int_equal(n, 4);
    gf_test_rmtree(dir);
    free(tmp);
    free(fresh);
    free(sub);
    free(link);
    free(mine);
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

/* Parse text expecting GF_EINVAL, and a logged message containing want. */
static void expect_refused(const char *text, size_t len, const char *want)
{
    gf_rttm *r = (gf_rttm *)1;
    gf_log_clear_last_error();
    assert_int_equal(gf_rttm_parse("in.rttm", text, len, &r), GF_EINVAL);
    assert_null(r);
    const char *msg = gf_log_last_error();
    if (!strstr(msg, want))
        fail_msg("message '%s' lacks '%s'", msg, want);
    /* Whatever the input, the message is printable ASCII. */
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
        if (*p < 0x20 || *p > 0x7E)
            fail_msg("byte 0x%02X in message '%s'", *p, msg);
}

#define REFUSED(lit, want) expect_refused((lit), sizeof(lit) - 1, (want))

static gf_rttm *parse_ok(const char *text, size_t len)
{
    gf_rttm *r = NULL;
    assert_int_equal(gf_rttm_parse("in.rttm", text, len, &r), 0);
    assert_non_null(r);
    return r;
}

/* Times: 0 to GF_RTTM_MAX_TIME; anything else, however it is spelt, is an
 * error naming the file, the line and the field. */
static void test_time_range(void **state)
{
    (void)state;
    gf_log_level saved = gf_log_get_level();
    gf_log_init("test_rttm", GF_LOG_OFF);
    REFUSED("SPEAKER x 1 0 1 <NA> <NA> A <NA> <NA>\nSPEAKER x 1 1e308 1 <NA> <NA> A <NA> <NA>\n",
            "in.rttm:2: start '1e308' is out of range: times are 0 to 10000000 s");
    REFUSED("SPEAKER x 1 1 1e308 <NA> <NA> A <NA> <NA>\n", "in.rttm:1: duration '1e308' is out");
    REFUSED("SPEAKER x 1 1e400 1 <NA> <NA> A <NA> <NA>\n", "in.rttm:1: start '1e400' is out");
    REFUSED("SPEAKER x 1 1 10000000.5 <NA> <NA> A <NA> <NA>\n", "duration '10000000.5' is out");
    REFUSED("SPEAKER x 1 inf 1 <NA> <NA> A <NA> <NA>\n", "in.rttm:1: start 'inf' is out");
    REFUSED("SPEAKER x 1 INFINITY 1 <NA> <NA> A <NA> <NA>\n", "start 'INFINITY' is out");
    REFUSED("SPEAKER x 1 0 -inf <NA> <NA> A <NA> <NA>\n", "in.rttm:1: negative duration '-inf'");
    REFUSED("SPEAKER x 1 nan 1 <NA> <NA> A <NA> <NA>\n", "in.rttm:1: start 'nan' is not a number");
    REFUSED("SPEAKER x 1 0 -nan <NA> <NA> A <NA> <NA>\n", "duration '-nan' is not a number");
    REFUSED("SPEAKER x 1 0x1p80 1 <NA> <NA> A <NA> <NA>\n", "start '0x1p80' is out");
    REFUSED("SPEAKER x 1 1.5s 1 <NA> <NA> A <NA> <NA>\n", "start '1.5s' is not a number");
    REFUSED("SPEAKER x 99999999999 0 1 <NA> <NA> A <NA> <NA>\n",
            "in.rttm:1: channel '99999999999' is not an integer");
    /* A long field is cut in the message. */
    REFUSED("SPEAKER x 1 0 1234567890123456789012345678901234567890123456789x <NA> <NA> A "
            "<NA> <NA>\n", "duration '1234567890123456789012345678901234567890...'");

    /* At the bound: kept, and the end is exact. */
    const char ok[] = "SPEAKER x 1 10000000 10000000 <NA> <NA> A <NA> <NA>\n"
                      "SPEAKER x 1 9999999.999999 0.000001 <NA> <NA> B <NA> <NA>\n"
                      "SPEAKER x 1 -0 1e-400 <NA> <NA> C <NA> <NA>\n";
    gf_rttm *r = parse_ok(ok, sizeof ok - 1);
    assert_int_equal(r->n, 3);
    assert_true(r->turns[0].start + r->turns[0].duration == 2e7);
    assert_true(r->turns[1].start + r->turns[1].duration > r->turns[1].start);
    assert_true(r->turns[2].start == 0 && !signbit(r->turns[2].start));
    assert_true(r->turns[2].duration >= 0 && r->turns[2].duration < 1e-300);
    gf_rttm_destroy(&r);

    double t = -1;
    assert_int_equal(gf_rttm_parse_time("u.uem", 7, "end", "12.5", &t), 0);
    assert_true(t == 12.5);
    gf_log_clear_last_error();
    assert_int_equal(gf_rttm_parse_time("u.uem", 7, "end", "1e308", &t), GF_EINVAL);
    assert_non_null(strstr(gf_log_last_error(), "u.uem:7: end '1e308' is out of range"));
    assert_true(t == 12.5); /* untouched */
    gf_log_init("test_rttm", saved);
}

/* Binary input: refused at the first line that is not UTF-8 text, the byte
 * named as \xNN, never copied into the message. */
static void test_not_text(void **state)
{
    (void)state;
    gf_log_level saved = gf_log_get_level();
    gf_log_init("test_rttm", GF_LOG_OFF);
    REFUSED("SPEAKER x 1 0 1 <NA> <NA> A <NA> <NA>\nSPEAKER x 1 0 1 <NA> <NA> B\0 <NA> <NA>\n",
            "in.rttm:2: not text: byte \\x00 at column 28 is a control character (NUL");
    REFUSED("\x7F" "ELF\x02\x01\x01\n", "in.rttm:1: not text: byte \\x7F at column 1");
    REFUSED("# \x1b]0;title\x07\n", "in.rttm:1: not text: byte \\x1B at column 3");
    REFUSED("SPEAKER x 1 0 1 <NA> <NA> sp\xe9" "aker <NA> <NA>\n",
            "in.rttm:1: not text: byte \\xE9 at column 29 is not valid UTF-8");
    REFUSED("\x1f\x8b\x08\x00", "in.rttm:1: not text: byte \\x1F at column 1");
    REFUSED("A\xc0\xaf\n", "byte \\xC0 at column 2 is not valid UTF-8");         /* overlong '/' */
    REFUSED("A\xe0\x80\xaf\n", "byte \\xE0 at column 2 is not valid UTF-8");     /* overlong */
    REFUSED("A\xed\xa0\x80\n", "byte \\xED at column 2 is not valid UTF-8");     /* surrogate */
    REFUSED("A\xf4\x90\x80\x80\n", "byte \\xF4 at column 2 is not valid UTF-8"); /* > U+10FFFF */
    REFUSED("A\xe2\x82\n", "byte \\xE2 at column 2 is not valid UTF-8");         /* cut short */
    REFUSED("A\xc2\x9b" "31m\n", "byte \\xC2 at column 2 is not printable (a C1 control");
    REFUSED("A\xc2" "A\n", "byte \\xC2 at column 2 is not valid UTF-8");
    REFUSED("SPEAKER x 1 0 1 <NA> <NA> A <NA> <NA>\r\r\n", "byte \\x0D at column 38");
    /* Every byte value alone on a line: blank (accepted, no turns), or
     * refused as not text or as holding no SPEAKER record. */
    for (int c = 0; c < 256; c++) {
        char line[3] = { (char)c, '\n', 0 };
        gf_rttm *r = NULL;
        gf_log_clear_last_error();
        int rc = gf_rttm_parse("in.rttm", line, 2, &r);
        bool blank = c == '\t' || c == '\n' || c == '\r' || c == ' ';
        bool printable = c > 0x20 && c < 0x7F;
        if (blank) {
            assert_int_equal(rc, 0);
            assert_int_equal(r->n, 0);
            gf_rttm_destroy(&r);
        } else {
            assert_int_equal(rc, GF_EINVAL);
            assert_non_null(strstr(gf_log_last_error(),
                                   printable ? "holds no SPEAKER records" : "not text"));
        }
    }

    /* UTF-8 text, a byte order mark and CRLF endings are fine. */
    const char ok[] = "\xef\xbb\xbfSPEAKER x 1 0 1 <NA> <NA> Zo\xc3\xab <NA> <NA>\r\n"
                      "SPEAKER x\t1 1 1 <NA> <NA> \xe8\xaf\xb4\xe8\xaf\x9d\xe4\xba\xba <NA> <NA>\n"
                      "SPEAKER x 1 2 1 <NA> <NA> \xf0\x9f\x8e\xa4 <NA> <NA>\n";
    gf_rttm *r = parse_ok(ok, sizeof ok - 1);
    assert_int_equal(r->n, 3);
    assert_string_equal(r->turns[0].speaker, "Zo\xc3\xab");
    assert_string_equal(r->turns[1].speaker, "\xe8\xaf\xb4\xe8\xaf\x9d\xe4\xba\xba");
    gf_rttm_destroy(&r);
    assert_int_equal(gf_rttm_check_text("t", 1, "a\tb \xc2\xa0", 6), 0);
    assert_int_equal(gf_rttm_check_text("t", 1, "a\0b", 3), GF_EINVAL);
    gf_log_init("test_rttm", saved);
}

/* A file with lines but no SPEAKER record is not an RTTM of turns; an empty
 * or blank one is the RTTM of no speech. */
static void test_no_speaker_records(void **state)
{
    (void)state;
    gf_log_level saved = gf_log_get_level();
    gf_log_init("test_rttm", GF_LOG_OFF);
    REFUSED("These are not the turns\nyou are looking for.\n",
            "in.rttm holds no SPEAKER records (2 non-blank lines; line 1 begins 'These')");
    REFUSED("\n\n# a comment\n", "in.rttm holds no SPEAKER records (1 non-blank line; line 3 "
                                 "begins '#')");
    REFUSED("SPKR-INFO x 1 <NA> <NA> <NA> unknown A <NA> <NA>\n",
            "holds no SPEAKER records (1 non-blank line; line 1 begins 'SPKR-INFO')");
    REFUSED("speaker x 1 0 1 <NA> <NA> A <NA> <NA>\n", "line 1 begins 'speaker'");
    const char *blank[] = { "", "\n", "\n \t\n\r\n", "\xef\xbb\xbf", "   " };
    for (size_t i = 0; i < sizeof blank / sizeof blank[0]; i++) {
        gf_rttm *r = parse_ok(blank[i], strlen(blank[i]));
        assert_int_equal(r->n, 0);
        gf_rttm_destroy(&r);
    }
    /* From a file too. */
    char dir[256];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-test-rttm"), 0);
    char *path = gf_strfmt("%s/hello.rttm", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs("hello\n", f) >= 0, 1);
    fclose(f);
    gf_rttm *r = NULL;
    gf_log_clear_last_error();
    assert_int_equal(gf_rttm_read(path, &r), GF_EINVAL);
    assert_null(r);
    assert_non_null(strstr(gf_log_last_error(), "holds no SPEAKER records"));
    assert_non_null(strstr(gf_log_last_error(), path));
    gf_test_rmtree(dir);
    free(path);
    gf_log_init("test_rttm", saved);
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
            for (size_t i = 0; i < r->n; i++) {
                const gf_turn *t = &r->turns[i];
                assert_true(t->start >= 0 && t->start <= GF_RTTM_MAX_TIME);
                assert_true(t->duration >= 0 && t->duration <= GF_RTTM_MAX_TIME);
            }
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
        cmocka_unit_test(test_no_replace),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_time_range),
        cmocka_unit_test(test_not_text),
        cmocka_unit_test(test_no_speaker_records),
        cmocka_unit_test(test_mutations_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
