/* jobs.c — gpuflock-jobs: the job commands (submit, run, queue, show, wait,
 * cancel, logs, workers), exec'd by the gpuflock front. Linked with the
 * broker client (libzmq, msgpack-c) but none of the diarization code, so one
 * CLI call per job stays cheap (bench/jobs). */
#include "common/error.h"
#include "common/log.h"
#include "cli/front/job_commands.h"

#include <stdio.h>
#include <string.h>

/* Defined in cli/cmd_<name>.c. */
#define DECLARE(cmd) int gf_cmd_##cmd(int argc, char **argv);
GF_JOB_COMMANDS(DECLARE)
#undef DECLARE

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
#define ENTRY(cmd) { #cmd, gf_cmd_##cmd },
    GF_JOB_COMMANDS(ENTRY)
#undef ENTRY
};

int main(int argc, char **argv)
{
    gf_log_init("gpuflock", GF_LOG_WARN);
    for (size_t i = 0; argc >= 2 && i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "gpuflock-jobs: not a job command: %s (run it through gpuflock)\n",
            argc >= 2 ? argv[1] : "(none)");
    return GF_EXIT_USAGE;
}
