/* job_commands.h — the job commands gpuflock-jobs runs (and the gpuflock
 * front hands to it), one list for both: X(name) per command, defined in
 * cli/cmd_<name>.c as gf_cmd_<name>. */
#ifndef GF_JOB_COMMANDS_H
#define GF_JOB_COMMANDS_H

#define GF_JOB_COMMANDS(X) \
    X(submit)              \
    X(run)                 \
    X(queue)               \
    X(history)             \
    X(show)                \
    X(wait)                \
    X(cancel)              \
    X(purge)               \
    X(logs)                \
    X(workers)

#endif
