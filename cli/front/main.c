/* main.c — gpuflock's front door.
 *
 * `gpuflock exec` stands in front of every guarded command, so it must cost
 * no more than flock(1). The full command links the diarization pipeline,
 * whose BLAS library starts threads and maps buffers before main() even
 * runs (about 20 ms). So this front handles the lock commands itself, linked
 * against the lock, config and card modules only, and exec's gpuflock-cli
 * (beside it) with the same arguments for everything else. */
#include "common/error.h"
#include "common/log.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Defined in cli/cmd_exec.c and cli/cmd_locks.c. */
int gf_cmd_exec(int argc, char **argv);
int gf_cmd_locks(int argc, char **argv);

#define FULL_CLI "gpuflock-cli"

/* The full command, from the folder this program was run from. */
static int run_full(char **argv)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - sizeof FULL_CLI - 1);
    if (n <= 0) {
        fprintf(stderr, "gpuflock: cannot find my own program: %s\n", strerror(errno));
        return GF_EXIT_SOFTWARE;
    }
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    strcpy(slash ? slash + 1 : path, FULL_CLI);
    execv(path, argv);
    fprintf(stderr, "gpuflock: cannot run %s: %s\n", path, strerror(errno));
    return GF_EXIT_SOFTWARE;
}

int main(int argc, char **argv)
{
    gf_log_init("gpuflock", GF_LOG_WARN);
    if (argc >= 2 && strcmp(argv[1], "exec") == 0)
        return gf_cmd_exec(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "locks") == 0)
        return gf_cmd_locks(argc - 1, argv + 1);
    return run_full(argv);
}
