/* main.c — gpuflock's front door.
 *
 * `gpuflock exec` stands in front of every guarded command, so it must cost
 * no more than flock(1); `gpuflock submit` is called once per job by
 * scripts, so it must cost no more than task-spooler's tsp. The full
 * command links the diarization pipeline, whose BLAS library starts threads
 * and maps buffers before main() even runs (about 20 ms), and libzmq alone
 * loads 17 libraries and starts a thread. So this front is linked against
 * the lock, config, card and protocol modules and the CLI's own ZMTP client
 * only: it runs `exec`, `locks`, `version` and, when the broker is on an ipc://
 * endpoint (the default), the job commands itself; it exec's gpuflock-cli
 * (beside it, same arguments) for everything else, tcp:// brokers included.
 * The options before the command (`gpuflock --config FILE wait 3`) are read
 * as gpuflock-cli reads them (cli/cliopts.h) and handed to the command as
 * if they came after its name.
 *
 * Built with GF_FRONT_STATIC (the Makefile, where musl-gcc is found) it is a
 * static musl program: glibc's start-up alone costs about 0.5 ms of CPU a
 * call on a virtual machine (its cpuid probes trap to the hypervisor), musl's
 * 0.02 ms. A static program cannot load the CUDA driver, so there `exec` and
 * `locks` on a configuration with a CUDA card, or with its cards left to be
 * found, are handed to gpuflock-exec, this same front built against glibc. */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "cli/front/job_commands.h"
#include "net/transport.h"
#include "common/blasenv.h"
#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Defined in cli/cmd_<name>.c. */
int gf_cmd_exec(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_locks(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_version(int argc, char **argv, gf_cli_ctx *cli);
#define DECLARE(cmd) int gf_cmd_##cmd(int argc, char **argv, gf_cli_ctx *cli);
GF_JOB_COMMANDS(DECLARE)
#undef DECLARE

#define FULL_CLI "gpuflock-cli"
#define DRIVER_FRONT "gpuflock-exec"   /* this front with the C library's dlopen */

/* The client backend of this program: ipc:// only, no libzmq (a static
 * program cannot link it); gpuflock-cli has libzmq for every endpoint. */
const gf_transport *const gf_client_transports[] = { &gf_transport_zmtp, NULL };

/* The commands this program runs itself; the others are gpuflock-cli's. */
typedef enum {
    FRONT_LOCAL,    /* here, always: version */
    FRONT_CARDS,    /* here, or in gpuflock-exec where the CUDA driver is needed: exec, locks */
    FRONT_JOB,      /* here where this program reaches the broker: the job commands */
} front_kind;

static const struct {
    const char *name;
    gf_cli_fn run;
    front_kind kind;
} front_commands[] = {
    { "exec", gf_cmd_exec, FRONT_CARDS },
    { "locks", gf_cmd_locks, FRONT_CARDS },
    { "version", gf_cmd_version, FRONT_LOCAL },
#define ENTRY(cmd) { #cmd, gf_cmd_##cmd, FRONT_JOB },
    GF_JOB_COMMANDS(ENTRY)
#undef ENTRY
};

/* Another gpuflock program, from the folder this one was run from. */
static int run_other(const char *program, char **argv)
{
    char *path = gf_beside_self(program);
    if (!path) {
        fprintf(stderr, "gpuflock: cannot find my own program: %s\n", strerror(errno));
        return GF_EXIT_SOFTWARE;
    }
    if (strcmp(program, FULL_CLI) == 0)
        gf_blas_spin_before_exec();   /* gpuflock-cli links the BLAS library */
    execv(path, argv);
    fprintf(stderr, "gpuflock: cannot run %s: %s\n", path, strerror(errno));
    free(path);
    return GF_EXIT_SOFTWARE;
}

/* The configuration the command will use, without looking for cards: the
 * --config FILE / --config=FILE before "--" in its argv (argv[0] its name)
 * as the commands' option parsers take it. NULL where it does not load: the
 * command reports that itself. */
static gf_config *command_config(int argc, char **argv, const char **path)
{
    *path = NULL;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            *path = argv[++i];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            *path = argv[i] + 9;
    }
    gf_log_level saved = gf_log_get_level();
    gf_log_init("gpuflock", GF_LOG_OFF);
    gf_config *cfg = NULL;
    if (gf_config_load_no_devices(*path, &cfg) != 0)
        cfg = NULL;
    gf_log_init("gpuflock", saved);
    return cfg;
}

/* Can this program's client backend reach the broker of the configuration
 * the command will use (ipc://: gf_client_transports below)? The
 * configuration stays in ctx for the command's client to take. */
static bool broker_reached(int argc, char **argv, gf_cli_ctx *ctx)
{
    gf_config *cfg = command_config(argc, argv, &ctx->config_path);
    if (!cfg)
        return true;
    ctx->config = cfg;
    return gf_client_reaches(cfg) != NULL;
}

#ifdef GF_FRONT_STATIC
/* Will `exec` or `locks` need the CUDA driver: a card of kind cuda, or cards
 * not declared (found through the driver)? */
static bool needs_driver(int argc, char **argv)
{
    const char *path;
    gf_config *cfg = command_config(argc, argv, &path);
    bool cuda = cfg && !cfg->devices_declared;
    for (size_t i = 0; cfg && i < cfg->n_devices; i++)
        cuda |= cfg->devices[i].kind == GF_DEVICE_CUDA;
    gf_config_destroy(&cfg);
    return cuda;
}
#endif

/* The command's argv (argv[0] its name) as front_commands[i] runs it; the
 * program's own argv goes to the others unchanged. */
static int run_front(size_t i, int argc, char **argv, char **prog_argv)
{
    gf_cli_ctx ctx = { .config_path = NULL, .config = NULL };
    switch (front_commands[i].kind) {
    case FRONT_LOCAL:
        break;
    case FRONT_CARDS:
#ifdef GF_FRONT_STATIC
        if (needs_driver(argc, argv))
            return run_other(DRIVER_FRONT, prog_argv);
#endif
        break;
    case FRONT_JOB:
        if (!broker_reached(argc, argv, &ctx)) {
            gf_config_destroy(&ctx.config);
            return run_other(FULL_CLI, prog_argv);
        }
        break;
    }
    char who[64];
    snprintf(who, sizeof who, "gpuflock %s", front_commands[i].name);
    gf_log_set_user(who);   /* what library code logs reads as the command's own */
    int rc = front_commands[i].run(argc, argv, &ctx);
    gf_config_destroy(&ctx.config);    /* a client that did not take it */
    return rc;
}

/* The index of a command in front_commands, -1: not one of them. */
static int front_find(const char *name)
{
    for (size_t i = 0; i < sizeof front_commands / sizeof front_commands[0]; i++)
        if (strcmp(name, front_commands[i].name) == 0)
            return (int)i;
    return -1;
}

int main(int argc, char **argv)
{
    gf_log_init("gpuflock", GF_LOG_WARN);
    gf_cli_globals g;
    if (gf_cli_globals_parse(argc, argv, &g) != 0)
        return GF_EXIT_USAGE;
    if (g.version) {
        char *version[] = { "version", NULL };
        return run_front((size_t)front_find("version"), 1, version, argv);
    }
    int i = g.command < argc ? front_find(argv[g.command]) : -1;
    if (i < 0)
        return run_other(FULL_CLI, argv);   /* help, and every other command */
    int n;
    char **args = gf_cli_globals_argv(&g, argc, argv, front_commands[i].kind != FRONT_LOCAL, &n);
    int rc = run_front((size_t)i, n, args, argv);
    free(args);
    return rc;
}
