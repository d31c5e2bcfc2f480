/* main.c — gpuflockd, the broker: arguments, configuration, pid file,
 * signals; the work is in broker/server.c and the rooms around it
 * (broker/server_int.h). */
#include "broker/server.h"
#include "common/blasenv.h"
#include "common/config.h"
#include "common/error.h"
#include "common/lock.h"
#include "common/log.h"
#include "common/pidfile.h"
#include "common/util.h"
#include "common/version.h"

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

static volatile sig_atomic_t stop_flag, hangup_flag;

static void on_stop(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* SIGHUP: the log file is reopened (logrotate's postrotate), in the loop */
static void on_hangup(int sig)
{
    (void)sig;
    hangup_flag = 1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpuflockd [--config FILE] [--foreground] [--log-level LEVEL]\n"
            "\n"
            "The gpuflock broker: queues jobs durably and runs them on one worker per card.\n"
            "  --config FILE     configuration (default $GPUFLOCK_CONFIG, then %s)\n"
            "  --foreground      stay in the foreground (systemd, tests); else detach\n"
            "  --log-level L     debug | info | warn | error (default: the config's)\n",
            GF_CONFIG_DEFAULT_PATH);
}

/* Take <run_dir>/gpuflockd.lock (one broker per run_dir) and publish
 * <run_dir>/gpuflockd.pid (into *pidfd). Returns the lock's fd (both are
 * kept open for the broker's life) or -1 after saying why. */
static int take_pidfile(const char *run_dir, int *pidfd)
{
    /* one broker per run_dir: a lock on a file only its user can open (a
     * user's shared flock on the readable pid file once stopped it) */
    char *path = gf_strfmt("%s/gpuflockd.lock", run_dir);
    long holder = 0;
    int fd = gf_pidfile_take(path, 0600, &holder);
    free(path);
    if (fd == -1) {
        if (holder > 0)
            fprintf(stderr, "gpuflockd: another gpuflockd (pid %ld) already serves %s\n", holder,
                    run_dir);
        else
            fprintf(stderr, "gpuflockd: another gpuflockd (pid ?) already serves %s\n", run_dir);
    }
    if (fd < 0)
        return -1;
    /* 0644: every user's CLI opens it to learn whether a broker runs */
    path = gf_strfmt("%s/gpuflockd.pid", run_dir);
    *pidfd = gf_pidfile_publish(path, 0644);
    free(path);
    if (*pidfd < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Every configured card's lock file and gate exist (root's, 0644) before a
 * user could make them: what deploy/gpuflock.tmpfiles does at boot, for the
 * cards this box has. A lock that cannot be made is logged (naming the fix)
 * and its card's jobs fail with the same reason; the other cards serve. */
static void prepare_locks(const gf_config *cfg)
{
    char why[1024];
    for (size_t i = 0; i < cfg->n_devices; i++)
        if (gf_lock_prepare(cfg->devices[i].lock, cfg->lock_owner_uid, why, sizeof why) != 0)
            GF_WARN("card %d: its jobs will fail until this is fixed", cfg->devices[i].index);
    if (cfg->n_devices > 0 &&
        gf_lock_prepare(cfg->bench_lock, cfg->lock_owner_uid, why, sizeof why) != 0)
        GF_WARN("the bench lock: proof jobs will fail until this is fixed");
}

int main(int argc, char **argv)
{
    gf_blas_spin_before_exec();   /* for the workers it starts: they link the BLAS library */
    const char *config_path = NULL, *level_name = NULL;
    bool foreground = false;
    static const struct option opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "foreground", no_argument, NULL, 'f' },
        { "log-level", required_argument, NULL, 'l' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "c:fl:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'c': config_path = optarg; break;
        case 'f': foreground = true; break;
        case 'l': level_name = optarg; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("gpuflockd %s (protocol %d)\n", GF_VERSION, GF_PROTOCOL_VERSION); return 0;
        default: usage(stderr); return GF_EXIT_USAGE;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return GF_EXIT_USAGE;
    }
    gf_log_init("gpuflockd", GF_LOG_INFO);
    gf_config *cfg = NULL;
    if (gf_config_load(config_path, &cfg) != 0)
        return GF_EXIT_CONFIG;
    gf_log_level level = GF_LOG_INFO;
    if (gf_log_level_parse(level_name ? level_name : cfg->log_level, &level) != 0) {
        fprintf(stderr, "gpuflockd: unknown log level '%s'\n", level_name);
        gf_config_destroy(&cfg);
        return GF_EXIT_USAGE;
    }
    gf_log_init("gpuflockd", level);
    /* every line from here on reaches the log file too; one that is not
     * safe to write is refused now (a full disk is not: stderr meanwhile) */
    int log_rc = gf_log_open_file(cfg->log_file);
    if (log_rc && log_rc != GF_ENOSPC) {
        gf_config_destroy(&cfg);
        return GF_EXIT_SOFTWARE;
    }
    const char *eps[2] = { cfg->client_endpoint, cfg->worker_endpoint };
    for (int i = 0; i < 2; i++)
        if (strncmp(eps[i], "tcp://", 6) == 0 &&
            (!cfg->curve_public_key || !cfg->curve_secret_key)) {
            GF_ERROR("%s: endpoint %s: tcp:// is refused without broker.curve_public_key and "
                     "broker.curve_secret_key", cfg->path ? cfg->path : "config", eps[i]);
            gf_config_destroy(&cfg);
            return GF_EXIT_CONFIG;
        }
    if (cfg->n_devices == 0)
        GF_WARN("no devices: no CUDA card found and none declared in the configuration");
    prepare_locks(cfg);

    /* The pid file first: a second broker is refused in the foreground,
     * and the lock (held by the open file) passes on to a detached child. */
    int pidfd = -1;
    int lockfd = take_pidfile(cfg->run_dir, &pidfd);
    if (lockfd < 0) {
        gf_config_destroy(&cfg);
        return GF_EXIT_UNAVAIL;
    }
    if (!foreground) {
        /* detach: the parent returns once the child is running */
        pid_t pid = fork();
        if (pid < 0) {
            GF_ERROR("fork: %s", strerror(errno));
            return GF_EXIT_SOFTWARE;
        }
        if (pid > 0)
            return 0;
        setsid();
        char text[32];
        int len = snprintf(text, sizeof(text), "%d\n", (int)getpid());
        for (int k = 0; k < 2; k++) {
            int fd = k ? lockfd : pidfd;
            if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)len, 0) != len)
                GF_WARN("cannot write the pid file: %s", strerror(errno));
        }
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            if (cfg->log_file)
                dup2(null, 2);    /* detached with a log file: its lines go there alone */
            close(null);
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_hangup;
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    gf_server *srv = gf_server_new(cfg);
    if (srv)
        gf_server_on_hangup(srv, &hangup_flag);
    int rc = srv ? gf_server_run(srv, &stop_flag) : GF_EIO;
    gf_server_destroy(&srv);
    close(pidfd);
    close(lockfd);
    gf_config_destroy(&cfg);
    return rc == 0 ? 0 : GF_EXIT_SOFTWARE;
}
