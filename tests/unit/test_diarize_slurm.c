/* test_diarize_slurm.c — what `gpuflock diarize --slurm` accepts before it
 * asks Slurm anything (cli/diarize_slurm.h): a partition and a time limit in
 * the characters sbatch takes, no '%' in --out (sbatch's output pattern),
 * --out required; and a task run refuses a task id that is not a number and
 * a run folder without its arguments. The array itself runs in
 * tests/integration/diarize_slurm.sh, on a real Slurm. */
#include "cli/diarize_slurm.h"
#include "common/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gf_diarize_slurm_opts good(void)
{
    return (gf_diarize_slurm_opts){ .out_dir = "out", .gpus_per_task = 1 };
}

static void test_plain_options_pass(void **state)
{
    (void)state;
    gf_diarize_slurm_opts o = good();
    o.partition = "gpu-h200,debug";
    o.time = "1-02:03:04";
    o.tasks = 16;
    assert_int_equal(gf_diarize_slurm_check(&o), 0);
}

static void test_partition_with_shell_characters_refused(void **state)
{
    (void)state;
    const char *bad[] = { "a;b", "a b", "$(id)", "'x'", "" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gf_diarize_slurm_opts o = good();
        o.partition = bad[i];
        assert_int_equal(gf_diarize_slurm_check(&o), GF_EXIT_USAGE);
    }
}

static void test_time_not_a_limit_refused(void **state)
{
    (void)state;
    const char *bad[] = { "soon", "1 hour", "10;reboot", "" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gf_diarize_slurm_opts o = good();
        o.time = bad[i];
        assert_int_equal(gf_diarize_slurm_check(&o), GF_EXIT_USAGE);
    }
}

static void test_out_required_and_without_percent(void **state)
{
    (void)state;
    gf_diarize_slurm_opts o = good();
    o.out_dir = NULL;
    assert_int_equal(gf_diarize_slurm_check(&o), GF_EXIT_USAGE);
    o.out_dir = "out%a";
    assert_int_equal(gf_diarize_slurm_check(&o), GF_EXIT_USAGE);
}

static void test_tasks_bounded(void **state)
{
    (void)state;
    gf_diarize_slurm_opts o = good();
    o.tasks = -1;
    assert_int_equal(gf_diarize_slurm_check(&o), GF_EXIT_USAGE);
    o.tasks = 10001;
    assert_int_equal(gf_diarize_slurm_check(&o), GF_EXIT_USAGE);
}

static void test_task_id_must_be_a_number(void **state)
{
    (void)state;
    assert_int_equal(gf_diarize_slurm_task("/nonexistent", "1;x"), GF_EXIT_USAGE);
    assert_int_equal(gf_diarize_slurm_task("/nonexistent", ""), GF_EXIT_USAGE);
}

static void test_task_without_run_folder_fails(void **state)
{
    (void)state;
    assert_int_equal(gf_diarize_slurm_task("/nonexistent/run", "0"), GF_EXIT_NOINPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_options_pass),
        cmocka_unit_test(test_partition_with_shell_characters_refused),
        cmocka_unit_test(test_time_not_a_limit_refused),
        cmocka_unit_test(test_out_required_and_without_percent),
        cmocka_unit_test(test_tasks_bounded),
        cmocka_unit_test(test_task_id_must_be_a_number),
        cmocka_unit_test(test_task_without_run_folder_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
