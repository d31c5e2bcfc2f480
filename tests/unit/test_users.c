/* test_users.c — the broker's uid lookups: names and groups from the real
 * NSS (root is always there), the number as text for an unknown uid, and
 * the cache that keeps them for its time to live. */
#include "broker/users.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool has(const uint32_t *v, size_t n, uint32_t x)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

static void test_root_and_stranger(void **state)
{
    (void)state;
    gf_users *u = gf_users_new(10000);
    char *name = gf_users_name(u, 0, 0);
    assert_string_equal(name, "root");
    free(name);
    uint32_t *g;
    size_t n;
    gf_users_groups(u, 0, 0, &g, &n);
    assert_true(n >= 1);
    assert_true(has(g, n, 0));
    free(g);
    /* nobody has uid 3999999999: its number, and its own gid as the only group */
    name = gf_users_name(u, 3999999999u, 4242);
    assert_string_equal(name, "3999999999");
    free(name);
    gf_users_groups(u, 3999999999u, 4242, &g, &n);
    assert_int_equal(n, 1);
    assert_int_equal(g[0], 4242);
    free(g);
    /* the same answers from the cache, and with a zero time to live */
    name = gf_users_name(u, 0, 0);
    assert_string_equal(name, "root");
    free(name);
    gf_users_destroy(&u);
    assert_null(u);
    gf_users_destroy(&u);
    u = gf_users_new(0);
    for (int i = 0; i < 3; i++) {
        name = gf_users_name(u, 0, 0);
        assert_string_equal(name, "root");
        free(name);
    }
    gf_users_destroy(&u);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_root_and_stranger) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
