/* client.c — the CLI's broker connection and shared job options (see
 * client.h).
 *
 * What goes wrong with the connection is said through the log, which the
 * command's main has set to its user's form ("gpuflock queue: no broker is
 * running ..."), so every command says it alike and a caller that asks the
 * broker only in passing (locks) can silence it. */
#include "cli/client.h"
#include "cli/cliopts.h"

#include "net/transport.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

extern char **environ;

struct gf_client {
    gf_config *cfg;
    const gf_transport *t;    /* the backend that reaches the endpoint */
    void *conn;               /* its connection; NULL after it broke */
    char *pidfile;
};

/* Is a broker alive on this run_dir? Its pid file is locked while it runs. */
static bool broker_alive(const char *pidfile)
{
    int fd = open(pidfile, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool alive = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return alive;
}

/* Was ctx's configuration loaded from config_path (both NULL: the default
 * search)? */
static bool same_path(const gf_cli_ctx *ctx, const char *config_path)
{
    return config_path && ctx->config_path ? strcmp(config_path, ctx->config_path) == 0
                                           : !config_path && !ctx->config_path;
}

const gf_transport *gf_client_reaches(const gf_config *cfg)
{
    for (const gf_transport *const *t = gf_client_transports; *t; t++)
        if ((*t)->supports(cfg))
            return *t;
    return NULL;
}

gf_client *gf_client_open(const char *config_path, gf_cli_ctx *ctx, int *status)
{
    gf_config *cfg = NULL;
    if (ctx && ctx->config && same_path(ctx, config_path)) {
        cfg = ctx->config;
        ctx->config = NULL;
    }
    if (!cfg && gf_config_load_no_devices(config_path, &cfg) != 0) {
        *status = GF_EXIT_CONFIG;
        return NULL;
    }
    gf_client *self = gf_calloc(1, sizeof(*self));
    self->cfg = cfg;
    self->pidfile = gf_strfmt("%s/gpuflockd.pid", cfg->run_dir);
    const char *ep = cfg->client_endpoint;
    if (gf_config_ipc_path(ep) && !broker_alive(self->pidfile)) {
        GF_ERROR("no broker is running (nothing holds %s); start one with: gpuflockd%s%s "
                 "(or: systemctl start gpuflockd)",
                 self->pidfile, cfg->path ? " --config " : "", cfg->path ? cfg->path : "");
        *status = GF_EXIT_UNAVAIL;
        gf_client_destroy(&self);
        return NULL;
    }
    self->t = gf_client_reaches(cfg);
    if (!self->t) {
        GF_ERROR("this program cannot reach %s (run gpuflock-cli, which can)", ep);
        *status = GF_EXIT_UNAVAIL;
        gf_client_destroy(&self);
        return NULL;
    }
    char err[512];
    self->conn = self->t->open(cfg, err, sizeof(err));
    if (!self->conn) {
        GF_ERROR("cannot reach the broker: %s", err);
        *status = GF_EXIT_UNAVAIL;
        gf_client_destroy(&self);
        return NULL;
    }
    *status = 0;
    return self;
}

void gf_client_destroy(gf_client **self_p)
{
    gf_client *self = *self_p;
    if (!self)
        return;
    if (self->conn)
        self->t->close(&self->conn);
    gf_config_destroy(&self->cfg);
    free(self->pidfile);
    free(self);
    *self_p = NULL;
}

/* The pid the broker wrote into its pid file, 0 if unreadable. */
static long broker_pid(const char *pidfile)
{
    FILE *f = fopen(pidfile, "r");
    long pid = 0;
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid;
}

/* (Re)send req on a connection, opening a new one if the last broke. */
static int send_req(gf_client *self, const gf_msg *req)
{
    char err[512];
    if (!self->conn && !(self->conn = self->t->open(self->cfg, err, sizeof(err))))
        return GF_EIO;
    if (self->t->send(self->conn, req, err, sizeof(err)) != 0) {
        self->t->close(&self->conn);
        return GF_EIO;
    }
    return 0;
}

int gf_client_call(gf_client *self, const gf_msg *req, gf_msg *rep, int timeout_ms)
{
    memset(rep, 0, sizeof(*rep));
    if (send_req(self, req) != 0) {
        GF_ERROR("cannot send the request to %s", self->cfg->client_endpoint);
        return GF_EIO;
    }
    uint64_t start = gf_now_ms();
    bool ipc = gf_config_ipc_path(self->cfg->client_endpoint) != NULL;
    long pid = ipc ? broker_pid(self->pidfile) : 0;
    for (;;) {
        char err[512];
        int rc = self->conn ? self->t->recv(self->conn, 250, rep, err, sizeof(err)) : GF_EIO;
        if (rc == 0)
            return 0;
        if (rc == GF_EINTR)
            return GF_EINTR;
        if (rc == GF_EPROTO || rc == GF_ETOOBIG) {
            GF_ERROR("bad reply from the broker: %s", err);
            return GF_EIO;
        }
        if (rc == GF_EPERM) {
            GF_ERROR("%s", err);
            return GF_EIO;
        }
        if (rc == GF_EIO) {
            /* the broker closed our connection: it stopped or died */
            if (self->conn)
                self->t->close(&self->conn);
            usleep(50000);
        }
        if (ipc && !broker_alive(self->pidfile)) {
            /* a restart may be under way: give the next broker a moment */
            usleep(500000);
            if (!broker_alive(self->pidfile)) {
                GF_ERROR("the broker went away (%s is free)", self->pidfile);
                return GF_EIO;
            }
        }
        long now_pid = ipc ? broker_pid(self->pidfile) : 0;
        if (!self->conn || (now_pid && pid && now_pid != pid)) {
            /* a new broker: the old one took the request with it; ask again */
            pid = now_pid;
            if (send_req(self, req) != 0 && !ipc)
                return GF_EIO;
        }
        if (timeout_ms >= 0 && gf_now_ms() - start >= (uint64_t)timeout_ms) {
            GF_ERROR("no answer from the broker at %s within %d ms", self->cfg->client_endpoint,
                     timeout_ms);
            return GF_EIO;
        }
    }
}

/* Is the n bytes at s the name of a request, or the first word of cmd? */
static bool names_request(const char *s, size_t n, const char *cmd)
{
    if (n == strcspn(cmd, ": ") && strncmp(s, cmd, n) == 0)
        return true;
    for (int op = GF_OP_NONE + 1; op < GF_OP_COUNT_; op++) {
        const char *name = gf_proto_op_name((gf_op)op);
        if (name && strlen(name) == n && strncmp(s, name, n) == 0)
            return true;
    }
    return false;
}

/* The broker's message without the request names it starts with ("submit:
 * no card 7 is configured", "submit: diarize: ..."): the line names the
 * command already. */
static const char *without_request_names(const char *msg, const char *cmd)
{
    for (;;) {
        size_t n = strcspn(msg, ": ");
        if (n == 0 || msg[n] != ':' || msg[n + 1] != ' ' || !names_request(msg, n, cmd))
            return msg;
        msg += n + 2;
    }
}

int gf_client_report(const char *cmd, const gf_msg *rep)
{
    if (rep->op == GF_OP_ERROR) {
        fprintf(stderr, "gpuflock %s: %s\n", cmd,
                rep->message ? without_request_names(rep->message, cmd) : "error");
        switch (rep->code) {
        case GF_EPERM: return 77;
        case GF_ENOENT: case GF_EINVAL: return GF_EXIT_USAGE;
        case GF_ENOSPC: return GF_EXIT_IOERR;   /* the broker's disk is full: try again later */
        default: return GF_EXIT_SOFTWARE;
        }
    }
    fprintf(stderr, "gpuflock %s: unexpected '%s' reply\n", cmd,
            gf_proto_op_name(rep->op) ? gf_proto_op_name(rep->op) : "?");
    return GF_EXIT_SOFTWARE;
}

void gf_jobopts_usage(FILE *out, const char *cmd)
{
    fprintf(out,
            "usage: gpuflock %s [OPTIONS] -- CMD [ARG...]\n"
            "%s"
            "\n"
            "  --gpu N          run on card N\n"
            "  --any            run on any card (default)\n"
            "  --gpus K         run on K cards at once (all or none)\n"
            "  -x, --exclusive  hold the card(s) alone (default)\n"
            "  -s, --shared     share the card(s) with other shared jobs\n"
            "  --proof          also take the bench lock; scrub proof.scrub_env\n"
            "  --priority P     higher runs first (default 0)\n"
            "  --time SEC       time limit: SIGTERM, then SIGKILL after kill_grace_s\n"
            "  --after IDS      start after these jobs ended successfully\n"
            "  --name NAME      a name shown by queue and show\n"
            "  --no-requeue     fail at once if its worker dies\n"
            "  --yieldable[=SIG@GRACE]\n"
            "                   may be asked to give its card back: gets SIG (default USR1),\n"
            "                   saves its state in $GPUFLOCK_CHECKPOINT_DIR and exits 85 within\n"
            "                   GRACE seconds (default 30), then runs again\n"
            "  --hold           stay pending until `gpuflock release`\n"
            "  --notify CMD     run CMD (sh -c, as you) when the job has ended; it gets\n"
            "                   $GPUFLOCK_JOB_ID, $GPUFLOCK_JOB_STATE, $GPUFLOCK_JOB_EXIT\n"
            "%s"
            "  --config FILE    configuration file\n",
            cmd,
            strcmp(cmd, "submit") == 0 ? "       gpuflock submit [OPTIONS] --array N -- CMD [ARG...]\n"
                                         "       gpuflock submit [OPTIONS] --file LIST\n"
                                       : "",
            strcmp(cmd, "submit") == 0
                ? "  --array N        N jobs, each with GPUFLOCK_ARRAY_INDEX=0..N-1\n"
                  "  --file LIST      one job per line of LIST (run by /bin/sh -c)\n"
                : "");
}

static int parse_num(const char *cmd, const char *opt, const char *s, long long lo, long long hi,
                     long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "gpuflock %s: %s: not a number in [%lld, %lld]: %s\n", cmd, opt, lo, hi, s);
        return GF_EXIT_USAGE;
    }
    *out = v;
    return 0;
}

int gf_parse_yieldable(const char *cmd, const char *arg, int32_t *sig, int32_t *grace_s)
{
    *sig = SIGUSR1;
    *grace_s = 30;
    if (!arg || !*arg)
        return 0;
    char *copy = gf_strdup(arg);
    char *at = strchr(copy, '@');
    if (at)
        *at++ = '\0';
    int rc = 0;
    if (*copy) {
        const char *name = strncmp(copy, "SIG", 3) == 0 ? copy + 3 : copy;
        static const struct { const char *name; int sig; } sigs[] = {
            { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "INT", SIGINT },
            { "HUP", SIGHUP }, { "QUIT", SIGQUIT }, { "ALRM", SIGALRM }, { "URG", SIGURG },
        };
        long long v;
        *sig = 0;
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            if (!strcmp(name, sigs[i].name))
                *sig = sigs[i].sig;
        if (!*sig && parse_num(cmd, "--yieldable signal", copy, 1, 64, &v) == 0)
            *sig = (int32_t)v;
        else if (!*sig)
            rc = GF_EXIT_USAGE;
        if (*sig == SIGKILL || *sig == SIGSTOP) {
            fprintf(stderr, "gpuflock %s: --yieldable: signal %d cannot be caught\n", cmd, *sig);
            rc = GF_EXIT_USAGE;
        }
    }
    long long g;
    if (!rc && at && parse_num(cmd, "--yieldable grace", at, 0, 86400, &g))
        rc = GF_EXIT_USAGE;
    else if (!rc && at)
        *grace_s = (int32_t)g;
    free(copy);
    return rc;
}

int gf_parse_ids(const char *cmd, int argc, char **argv, uint64_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    size_t cap = 0;
    for (int i = 0; i < argc; i++) {
        char *copy = gf_strdup(argv[i]);
        char *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            long long v;
            if (parse_num(cmd, "job id", tok, 1, INT64_MAX, &v)) {
                free(copy);
                free(*ids);
                *ids = NULL;
                return GF_EXIT_USAGE;
            }
            if (*n == cap) {
                cap = cap ? cap * 2 : 8;
                *ids = gf_realloc(*ids, cap * sizeof(uint64_t));
            }
            (*ids)[(*n)++] = (uint64_t)v;
        }
        free(copy);
    }
    return 0;
}

int gf_jobopts_parse(int argc, char **argv, gf_jobopts *o, bool allow_batch)
{
    memset(o, 0, sizeof(*o));
    gf_job_spec_init(&o->spec);
    const char *cmd = argv[0];
    enum { O_GPU = 256, O_ANY, O_GPUS, O_PROOF, O_PRIO, O_TIME, O_AFTER, O_NAME, O_NOREQ,
           O_ARRAY, O_FILE, O_CONFIG, O_YIELD, O_HOLD, O_NOTIFY };
    static const struct option opts[] = {
        { "gpu", required_argument, NULL, O_GPU },
        { "any", no_argument, NULL, O_ANY },
        { "gpus", required_argument, NULL, O_GPUS },
        { "exclusive", no_argument, NULL, 'x' },
        { "shared", no_argument, NULL, 's' },
        { "proof", no_argument, NULL, O_PROOF },
        { "priority", required_argument, NULL, O_PRIO },
        { "time", required_argument, NULL, O_TIME },
        { "after", required_argument, NULL, O_AFTER },
        { "name", required_argument, NULL, O_NAME },
        { "no-requeue", no_argument, NULL, O_NOREQ },
        { "yieldable", optional_argument, NULL, O_YIELD },
        { "hold", no_argument, NULL, O_HOLD },
        { "notify", required_argument, NULL, O_NOTIFY },
        { "array", required_argument, NULL, O_ARRAY },
        { "file", required_argument, NULL, O_FILE },
        { "config", required_argument, NULL, O_CONFIG },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    optind = 1;
    opterr = 0;
    int c;
    long long v;
    int devices_given = 0;
    while ((c = getopt_long(argc, argv, "+:xsh", opts, NULL)) != -1) {
        switch (c) {
        case O_GPU:
            if (parse_num(cmd, "--gpu", optarg, 0, INT32_MAX, &v))
                return GF_EXIT_USAGE;
            o->spec.req = GF_REQ_GPU;
            o->spec.gpu = (int32_t)v;
            devices_given++;
            break;
        case O_ANY:
            o->spec.req = GF_REQ_ANY;
            devices_given++;
            break;
        case O_GPUS:
            if (parse_num(cmd, "--gpus", optarg, 1, GF_PROTO_MAX_CARDS, &v))
                return GF_EXIT_USAGE;
            o->spec.req = GF_REQ_GPUS;
            o->spec.gpus = (int32_t)v;
            devices_given++;
            break;
        case 'x': o->spec.mode = GF_MODE_EXCLUSIVE; break;
        case 's': o->spec.mode = GF_MODE_SHARED; break;
        case O_PROOF: o->spec.proof = true; break;
        case O_PRIO:
            if (parse_num(cmd, "--priority", optarg, -1000000, 1000000, &v))
                return GF_EXIT_USAGE;
            o->spec.priority = (int32_t)v;
            break;
        case O_TIME:
            if (parse_num(cmd, "--time", optarg, 1, 100LL * 365 * 86400, &v))
                return GF_EXIT_USAGE;
            o->spec.time_limit_s = v;
            break;
        case O_AFTER: {
            uint64_t *ids;
            size_t n;
            char *one[1] = { optarg };
            if (gf_parse_ids(cmd, 1, one, &ids, &n))
                return GF_EXIT_USAGE;
            o->spec.after = gf_realloc(o->spec.after, (o->spec.n_after + n) * sizeof(uint64_t));
            memcpy(o->spec.after + o->spec.n_after, ids, n * sizeof(uint64_t));
            o->spec.n_after += n;
            free(ids);
            break;
        }
        case O_NAME:
            if (strlen(optarg) > GF_PROTO_MAX_NAME) {
                fprintf(stderr, "gpuflock %s: --name: longer than %u bytes\n", cmd,
                        GF_PROTO_MAX_NAME);
                return GF_EXIT_USAGE;
            }
            free(o->spec.name);
            o->spec.name = gf_strdup(optarg);
            break;
        case O_NOREQ: o->spec.no_requeue = true; break;
        case O_YIELD:
            if (gf_parse_yieldable(cmd, optarg, &o->spec.yield_sig, &o->spec.yield_grace_s))
                return GF_EXIT_USAGE;
            break;
        case O_HOLD: o->spec.hold = true; break;
        case O_NOTIFY:
            if (!*optarg || strlen(optarg) > GF_PROTO_MAX_PATH)
                return gf_cli_usage_error(cmd, "--notify: a command of 1 to %u bytes",
                                          GF_PROTO_MAX_PATH);
            free(o->spec.notify);
            o->spec.notify = gf_strdup(optarg);
            break;
        case O_ARRAY:
            if (!allow_batch)
                return gf_cli_usage_error(cmd, "--array is submit's: %s runs one command", cmd);
            if (parse_num(cmd, "--array", optarg, 1, GF_PROTO_MAX_BATCH, &v))
                return GF_EXIT_USAGE;
            o->array = (unsigned)v;
            break;
        case O_FILE:
            if (!allow_batch)
                return gf_cli_usage_error(cmd, "--file is submit's: %s runs one command", cmd);
            o->file = optarg;
            break;
        case O_CONFIG: o->config = optarg; break;
        case 'h': o->help = true; return 0;
        default:
            return gf_cli_opt_error(cmd, c, argc, argv, opts);
        }
    }
    if (devices_given > 1) {
        fprintf(stderr, "gpuflock %s: --gpu, --any and --gpus exclude each other\n", cmd);
        return GF_EXIT_USAGE;
    }
    if (o->file && o->array) {
        fprintf(stderr, "gpuflock %s: --array and --file exclude each other\n", cmd);
        return GF_EXIT_USAGE;
    }
    int n = argc - optind;
    if (o->file && n != 0)
        return gf_cli_usage_error(cmd, "--file takes no command");
    if (!o->file && n < 1)
        return gf_cli_usage_error(cmd, "no command given (usage: gpuflock %s [OPTIONS] -- CMD "
                                  "[ARG...])", cmd);
    if (n > (int)GF_PROTO_MAX_ARGV) {
        fprintf(stderr, "gpuflock %s: more than %u arguments\n", cmd, GF_PROTO_MAX_ARGV);
        return GF_EXIT_USAGE;
    }
    /* the command; for --file the spec carries /bin/sh alone and the broker
     * makes each job `/bin/sh -c LINE` from the lines sent with it */
    o->spec.argc = o->file ? 1 : (size_t)n;
    o->spec.argv = gf_calloc(o->spec.argc + 1, sizeof(char *));
    for (size_t i = 0; i < o->spec.argc; i++)
        o->spec.argv[i] = gf_strdup(o->file ? "/bin/sh" : argv[optind + (int)i]);
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd)))
        o->spec.cwd = gf_strdup(cwd);
    size_t ne = 0;
    while (environ[ne])
        ne++;
    o->spec.env = gf_calloc(ne + 1, sizeof(char *));
    for (size_t i = 0; i < ne; i++)
        if (strlen(environ[i]) <= GF_PROTO_MAX_STR && o->spec.n_env < GF_PROTO_MAX_ENV)
            o->spec.env[o->spec.n_env++] = gf_strdup(environ[i]);
    return 0;
}

void gf_jobopts_clear(gf_jobopts *o)
{
    gf_job_spec_clear(&o->spec);
}

int gf_job_exit_status(const gf_job *j)
{
    if (j->state == GF_STATE_DONE)
        return 0;
    if (j->state == GF_STATE_FAILED) {
        if (j->term_signal > 0)
            return 128 + j->term_signal;
        if (j->exit_status > 0)
            return j->exit_status;
    }
    return 1;
}

int gf_client_once(const char *config_path, gf_cli_ctx *ctx, const gf_msg *req, gf_msg *rep,
                   int timeout_ms)
{
    int rc;
    memset(rep, 0, sizeof(*rep));
    gf_client *cl = gf_client_open(config_path, ctx, &rc);
    if (!cl)
        return rc;
    rc = gf_client_call(cl, req, rep, timeout_ms) != 0 ? GF_EXIT_UNAVAIL : 0;
    gf_client_destroy(&cl);
    return rc;
}

int gf_client_ids_verb(const char *config, gf_cli_ctx *ctx, gf_msg *req, const char *name,
                       const char *(*words)(gf_op op, int code))
{
    int rc;
    gf_client *cl = gf_client_open(config, ctx, &rc);
    if (!cl)
        return rc;
    gf_msg rep;
    if (gf_client_call(cl, req, &rep, 30000) != 0) {
        gf_client_destroy(&cl);
        return GF_EXIT_UNAVAIL;
    }
    if (rep.op != GF_OP_CODES || rep.n_codes != req->n_ids) {
        rc = gf_client_report(name, &rep);
    } else {
        rc = 0;
        for (size_t i = 0; i < rep.n_codes; i++) {
            int code = rep.codes[i];
            if (code == 0)
                continue;
            fprintf(stderr, "gpuflock %s: job %llu: %s\n", name, (unsigned long long)req->ids[i],
                    code == GF_ENOENT ? "no such job"
                    : code == GF_EPERM ? "not your job" : words(req->op, code));
            if (!rc || code == GF_EPERM)
                rc = code == GF_EPERM ? 77 : 1;
        }
    }
    gf_msg_clear(&rep);
    gf_client_destroy(&cl);
    return rc;
}
