/* test_sha256.c — SHA-256 against the FIPS 180-2 test vectors. */
#include "common/error.h"
#include "common/sha256.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_vectors(void **state)
{
    (void)state;
    char hex[GF_SHA256_HEX_LEN];
    gf_sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    gf_sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_file_matches_buffer(void **state)
{
    (void)state;
    char path[] = "/tmp/gf_sha256_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static unsigned char data[200000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 131u + 7u);
    assert_int_equal(write(fd, data, sizeof data), (ssize_t)sizeof data);
    close(fd);
    char a[GF_SHA256_HEX_LEN], b[GF_SHA256_HEX_LEN];
    gf_sha256_hex(data, sizeof data, a);
    assert_int_equal(gf_sha256_file_hex(path, b), 0);
    assert_string_equal(a, b);
    unlink(path);
    assert_int_equal(gf_sha256_file_hex(path, b), GF_ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_file_matches_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
