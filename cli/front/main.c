/* main.c — gpuflock's front door.
 *
 * `gpuflock exec` stands in front of every guarded command, so it must cost
 * no more than flock(1). The full command links the diarization pipeline,
 * whose BLAS library starts threads and maps buffers before main() even
 * runs (about 20 ms). So this front handles the lock commands itself, linked
 * against the lock, config and card modules only; it exec's gpuflock-jobs
 * (the job commands, with the broker client but no BLAS) or gpuflock-cli
 * (everything else), both beside it, with the same arguments. */
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "cli/front/job_commands.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Defined in cli/cmd_exec.c and cli/cmd_locks.c. */
int gf_cmd_exec(int argc, char **argv);
int gf_cmd_locks(int argc, char **argv);

#define FULL_CLI "gpuflock-cli"
#define JOBS_CLI "gpuflock-jobs"

/* The job commands: gpuflock-jobs runs them with libzmq and msgpack-c but
 * no diarization code (loading libzmq here would slow `exec` down). */
#define NAME(cmd) #cmd,
static const char *const job_commands[] = { GF_JOB_COMMANDS(NAME) };
#undef NAME

/* Another gpuflock program, from the folder this one was run from. */
static int run_other(const char *program, char **argv)
{
    char *path = gf_beside_self(program);
    if (!path) {
        fprintf(stderr, "gpuflock: cannot find my own program: %s\n", strerror(errno));
        return GF_EXIT_SOFTWARE;
    }
    execv(path, argv);
    fprintf(stderr, "gpuflock: cannot run %s: %s\n", path, strerror(errno));
    free(path);
    return GF_EXIT_SOFTWARE;
}

int main(int argc, char **argv)
{
    gf_log_init("gpuflock", GF_LOG_WARN);
    if (argc >= 2 && strcmp(argv[1], "exec") == 0)
        return gf_cmd_exec(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "locks") == 0)
        return gf_cmd_locks(argc - 1, argv + 1);
    for (size_t i = 0; argc >= 2 && i < sizeof job_commands / sizeof job_commands[0]; i++)
        if (strcmp(argv[1], job_commands[i]) == 0)
            return run_other(JOBS_CLI, argv);
    return run_other(FULL_CLI, argv);
}
