/* test_env.c — building a command's environment; the BLAS spin handed to our
 * own BLAS programs and taken back (common/blasenv.c). */
#include "common/blasenv.h"
#include "common/env.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t count(char *const *vars)
{
    size_t n = 0;
    while (vars[n])
        n++;
    return n;
}

static void test_copy_set_unset(void **state)
{
    (void)state;
    char *base[] = { "PATH=/usr/bin", "CUDA_LAUNCH_BLOCKING=1", "HOME=/root", "noequals", NULL };
    gf_env *env = gf_env_new(base);
    assert_int_equal(count(gf_env_array(env)), 3);   /* an entry without '=' is dropped */
    assert_string_equal(gf_env_get(env, "HOME"), "/root");
    assert_null(gf_env_get(env, "HOM"));               /* names match whole */

    gf_env_set(env, "CUDA_VISIBLE_DEVICES", "GPU-1234");
    gf_env_set(env, "HOME", "/home/x");                 /* replaced in place */
    assert_string_equal(gf_env_array(env)[2], "HOME=/home/x");
    assert_string_equal(gf_env_get(env, "CUDA_VISIBLE_DEVICES"), "GPU-1234");

    assert_true(gf_env_unset(env, "CUDA_LAUNCH_BLOCKING"));
    assert_false(gf_env_unset(env, "CUDA_LAUNCH_BLOCKING"));
    assert_null(gf_env_get(env, "CUDA_LAUNCH_BLOCKING"));
    assert_int_equal(count(gf_env_array(env)), 3);
    assert_string_equal(gf_env_array(env)[0], "PATH=/usr/bin");
    gf_env_destroy(&env);
    assert_null(env);
    gf_env_destroy(&env);
}

static void test_repeated_name_removed_entirely(void **state)
{
    (void)state;
    char *base[] = { "A=1", "B=2", "A=3", NULL };
    gf_env *env = gf_env_new(base);
    assert_true(gf_env_unset(env, "A"));
    assert_int_equal(count(gf_env_array(env)), 1);
    assert_string_equal(gf_env_array(env)[0], "B=2");
    gf_env_destroy(&env);
}

static void test_grows(void **state)
{
    (void)state;
    gf_env *env = gf_env_new(NULL);
    char name[16];
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "V%d", i);
        gf_env_set(env, name, "x");
    }
    assert_int_equal(count(gf_env_array(env)), 100);
    assert_string_equal(gf_env_get(env, "V99"), "x");
    gf_env_destroy(&env);
}

/* "NAME=value" strings as they come from a submitter: a later copy of a
 * name replaces the earlier one in place; no '=' or an empty name: left out. */
static void test_put(void **state)
{
    (void)state;
    gf_env *env = gf_env_new(NULL);
    assert_true(gf_env_put(env, "A=1"));
    assert_true(gf_env_put(env, "AB=2"));
    assert_true(gf_env_put(env, "A=3"));
    assert_false(gf_env_put(env, "noequals"));
    assert_false(gf_env_put(env, "=x"));
    assert_true(gf_env_put(env, "E="));
    assert_int_equal(count(gf_env_array(env)), 3);
    assert_string_equal(gf_env_array(env)[0], "A=3");
    assert_string_equal(gf_env_array(env)[1], "AB=2");
    assert_string_equal(gf_env_get(env, "E"), "");
    gf_env_set(env, "AB", "x=y");
    assert_string_equal(gf_env_get(env, "AB"), "x=y");
    gf_env_destroy(&env);
}

/* Not set by the user: set for the program exec'd, removed again in it. */
static void test_blas_spin_ours(void **state)
{
    (void)state;
    unsetenv(GF_BLAS_SPIN_VAR);
    gf_blas_spin_before_exec();
    assert_string_equal(getenv(GF_BLAS_SPIN_VAR), GF_BLAS_SPIN_VALUE);
    gf_blas_spin_forget();
    assert_null(getenv(GF_BLAS_SPIN_VAR));
    assert_null(getenv("GPUFLOCK_BLAS_SPIN_SET"));
}

/* Set by the user: left as it is on both sides, so jobs see it. */
static void test_blas_spin_users(void **state)
{
    (void)state;
    setenv(GF_BLAS_SPIN_VAR, "7", 1);
    gf_blas_spin_before_exec();
    assert_string_equal(getenv(GF_BLAS_SPIN_VAR), "7");
    gf_blas_spin_forget();
    assert_string_equal(getenv(GF_BLAS_SPIN_VAR), "7");
    unsetenv(GF_BLAS_SPIN_VAR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_set_unset),
        cmocka_unit_test(test_repeated_name_removed_entirely),
        cmocka_unit_test(test_grows),
        cmocka_unit_test(test_put),
        cmocka_unit_test(test_blas_spin_ours),
        cmocka_unit_test(test_blas_spin_users),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
