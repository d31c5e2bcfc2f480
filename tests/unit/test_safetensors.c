/* test_safetensors.c — the safetensors reader on files the test writes: a good
 * one, then each kind of damage the loader must name (truncation, offsets that
 * overlap, leave gaps or run past the end, wrong shapes, missing tensors,
 * non-finite weights, bad JSON, unsupported dtypes, a wrong digest). */
#include "common/sha256.h"
#include "diar/io/safetensors.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

/* Write an 8-byte length, `header` padded with spaces to a multiple of 8,
 * then `data_len` bytes of data; `cut` bytes are dropped from the end. */
static void write_file(const char *header, const void *data, size_t data_len, size_t cut)
{
    size_t h = strlen(header), padded = (h + 7) / 8 * 8;
    size_t total = 8 + padded + data_len;
    unsigned char *buf = calloc(1, total);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    memcpy(buf + 8, header, h);
    memset(buf + 8 + h, ' ', padded - h);
    memcpy(buf + 8 + padded, data, data_len);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, total - cut, f), total - cut);
    fclose(f);
    free(buf);
}

/* Two F32 tensors a [2,3] and b [4] (40 bytes) and an I64 counter (8 bytes). */
static float data[10 + 2];
static const char *good_header =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
    "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[24,40]},"
    "\"bn.num_batches_tracked\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[40,48]}}";

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/gf_st_%d.safetensors", (int)getpid());
    for (int i = 0; i < 10; i++)
        data[i] = 0.25f * (float)i - 1.1f;
    int64_t counter = 12345;
    memcpy(&data[10], &counter, 8);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

static void test_good_file(void **state)
{
    (void)state;
    write_file(good_header, data, sizeof data, 0);
    gf_safetensors *st = gf_safetensors_open(path, NULL);
    assert_non_null(st);
    assert_int_equal(gf_safetensors_count(st), 3);
    const float *a = gf_safetensors_get(st, "a", 2, 2, 3);
    assert_non_null(a);
    assert_true(a[5] == data[5]);
    const gf_safetensors_tensor *t = gf_safetensors_find(st, "b");
    assert_non_null(t);
    assert_int_equal(t->ndim, 1);
    assert_int_equal(t->shape[0], 4);
    assert_int_equal(t->numel, 4);
    assert_string_equal(t->dtype, "F32");
    /* b was never fetched: one unused F32 tensor; the I64 counter does not count. */
    assert_int_equal(gf_safetensors_unused(st), 1);
    assert_non_null(gf_safetensors_get(st, "b", 1, 4));
    assert_int_equal(gf_safetensors_unused(st), 0);
    gf_safetensors_destroy(&st);
    assert_null(st);
    gf_safetensors_destroy(&st);
}

static void test_missing_and_wrong_shape(void **state)
{
    (void)state;
    write_file(good_header, data, sizeof data, 0);
    gf_safetensors *st = gf_safetensors_open(path, NULL);
    assert_non_null(st);
    assert_null(gf_safetensors_get(st, "c", 1, 4));
    assert_null(gf_safetensors_get(st, "a", 2, 3, 2));
    assert_null(gf_safetensors_get(st, "a", 1, 6));
    assert_null(gf_safetensors_get(st, "bn.num_batches_tracked", 0));  /* not F32 */
    gf_safetensors_destroy(&st);
}

static void test_digest(void **state)
{
    (void)state;
    write_file(good_header, data, sizeof data, 0);
    char hex[GF_SHA256_HEX_LEN];
    assert_int_equal(gf_sha256_file_hex(path, hex), 0);
    gf_safetensors *st = gf_safetensors_open(path, hex);
    assert_non_null(st);
    gf_safetensors_destroy(&st);
    hex[0] = hex[0] == '0' ? '1' : '0';
    assert_null(gf_safetensors_open(path, hex));
}

static void expect_rejected(const char *header, size_t cut)
{
    write_file(header, data, sizeof data, cut);
    gf_safetensors *st = gf_safetensors_open(path, NULL);
    if (st)
        fail_msg("accepted a bad file: %s (cut %zu)", header, cut);
}

static void test_truncated(void **state)
{
    (void)state;
    expect_rejected(good_header, 1);
    expect_rejected(good_header, 20);
    expect_rejected(good_header, sizeof data + 10);   /* into the header */
    FILE *f = fopen(path, "wb");
    fwrite("\x10\0\0", 1, 3, f);                        /* shorter than the length */
    fclose(f);
    assert_null(gf_safetensors_open(path, NULL));
    assert_null(gf_safetensors_open("/nonexistent/x.safetensors", NULL));
}

static void test_bad_offsets(void **state)
{
    (void)state;
    /* overlap */
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[20,36]},"
                    "\"c\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[36,48]}}", 0);
    /* gap at the start */
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[4,28]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[28,48]}}", 0);
    /* not covering the end */
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", 0);
    /* beyond the end */
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[10],\"data_offsets\":[24,64]}}", 0);
    /* size does not match the shape */
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,24]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[24,48]}}", 0);
    /* begin after end, negative */
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[24,0]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[12],\"data_offsets\":[0,48]}}", 0);
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,48]}}", 0);
    /* a dtype the networks never use */
    expect_rejected("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[11],\"data_offsets\":[2,46]},"
                    "\"c\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[46,48]}}", 0);
}

static void test_bad_header(void **state)
{
    (void)state;
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[12],\"data_offsets\":[0,48]", 0);
    expect_rejected("[1,2,3]", 0);
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[12]}}", 0);
    expect_rejected("{\"a\":{\"dtype\":\"Q7\",\"shape\":[12],\"data_offsets\":[0,48]}}", 0);
    expect_rejected("{\"a\":{\"dtype\":\"F16\",\"shape\":[24],\"data_offsets\":[0,48]}}", 0);
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[12],\"data_offsets\":[0,48]}} x", 0);
}

static void test_non_finite(void **state)
{
    (void)state;
    float saved = data[7];
    data[7] = NAN;
    expect_rejected(good_header, 0);
    data[7] = -INFINITY;
    expect_rejected(good_header, 0);
    data[7] = saved;
    write_file(good_header, data, sizeof data, 0);
    gf_safetensors *st = gf_safetensors_open(path, NULL);
    assert_non_null(st);
    gf_safetensors_destroy(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),
        cmocka_unit_test(test_missing_and_wrong_shape),
        cmocka_unit_test(test_digest),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_bad_offsets),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_non_finite),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
