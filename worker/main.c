/* main.c — gpuflock-worker: one per card. Arguments, configuration, the
 * card's identity and the worker's pid file; the work is in worker/agent.c. */
#include "common/blasenv.h"
#include "common/card.h"
#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/pidfile.h"
#include "common/util.h"
#include "common/version.h"
#include "worker/agent.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpuflock-worker --device N [--config FILE] [--log-level LEVEL]\n"
            "\n"
            "Serves one card for gpuflockd (which normally starts it). Started by hand\n"
            "or by systemd it joins the broker of the same configuration.\n");
}

/* <run_dir>/worker<N>.pid: one worker per card; the broker looks at it to
 * learn that a worker of an earlier broker is still alive. */
static int take_pidfile(const char *run_dir, int device)
{
    char *path = gf_strfmt("%s/worker%d.pid", run_dir, device);
    long holder = 0;
    int fd = gf_pidfile_take(path, 0600, &holder);   /* the broker's user and root alone */
    free(path);
    if (fd == -1) {
        if (holder > 0)
            GF_ERROR("card %d already has a worker (pid %ld)", device, holder);
        else
            GF_ERROR("card %d already has a worker (pid ?)", device);
    }
    return fd < 0 ? -1 : fd;
}

/* The write end is what on_signal needs; see main. */
static int signal_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t w = write(signal_pipe[1], &b, 1);   /* full pipe: a wake-up is already pending */
    (void)w;
    errno = saved;
}

int main(int argc, char **argv)
{
    gf_blas_spin_forget();
    const char *config_path = NULL, *level_name = NULL;
    long device = -1;
    static const struct option opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "device", required_argument, NULL, 'd' },
        { "log-level", required_argument, NULL, 'l' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "c:d:l:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': config_path = optarg; break;
        case 'd':
            device = strtol(optarg, &end, 10);
            if (*end || device < 0 || device > 1000000) {
                fprintf(stderr, "gpuflock-worker: --device: not a card number: %s\n", optarg);
                return GF_EXIT_USAGE;
            }
            break;
        case 'l': level_name = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return GF_EXIT_USAGE;
        }
    }
    if (device < 0 || optind != argc) {
        usage(stderr);
        return GF_EXIT_USAGE;
    }
    char prog[32];
    snprintf(prog, sizeof(prog), "worker%ld", device);
    gf_log_init(prog, GF_LOG_INFO);
    gf_config *cfg = NULL;
    if (gf_config_load(config_path, &cfg) != 0)
        return GF_EXIT_CONFIG;
    gf_log_level level;
    if (gf_log_level_parse(level_name ? level_name : cfg->log_level, &level) == 0)
        gf_log_init(prog, level);
    /* the broker's log file too; one it cannot write (logged) leaves stderr */
    gf_log_open_file(cfg->log_file);
    const gf_device_conf *dev = gf_config_device(cfg, (int)device);
    if (!dev) {
        GF_ERROR("no device %ld in %s", device, cfg->path ? cfg->path : "the built-in defaults");
        gf_config_destroy(&cfg);
        return GF_EXIT_CONFIG;
    }
    gf_card_identity card;
    if (gf_card_identify(dev, &card) != 0) {
        GF_ERROR("card %ld: cannot read its identity", device);
        gf_config_destroy(&cfg);
        return GF_EXIT_UNAVAIL;
    }
    int pidfd = take_pidfile(cfg->run_dir, (int)device);
    if (pidfd < 0) {
        gf_config_destroy(&cfg);
        return GF_EXIT_UNAVAIL;
    }
    signal(SIGPIPE, SIG_IGN);
    /* SIGCHLD, SIGTERM, SIGINT and SIGHUP (reopen the log file) become
     * bytes on a pipe the agent polls. A
     * handler, not a blocked mask and a signalfd: OpenBLAS starts its
     * threads before main() with nothing blocked, and a process-wide signal
     * delivered to one of them would be lost (SIGCHLD: a job reaped only at
     * the next heartbeat) or kill the worker outright (SIGTERM). */
    if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        GF_ERROR("pipe: %s", strerror(errno));
        close(pidfd);
        gf_config_destroy(&cfg);
        return GF_EXIT_SOFTWARE;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    gf_agent *agent = gf_agent_new(cfg, (int)device, &card, signal_pipe[0]);
    int rc = agent ? gf_agent_run(agent) : GF_EIO;
    gf_agent_destroy(&agent);
    close(pidfd);
    gf_config_destroy(&cfg);
    return rc == 0 ? 0 : GF_EXIT_SOFTWARE;
}
