/* cmd_run.c — `gpuflock run [opts] -- CMD`: submit one job, stream its
 * stdout and stderr while it runs, exit with its status (as srun does).
 * Ctrl-C cancels the job (its whole process group), then exits 130. */
#include "cli/client.h"
#include "common/error.h"
#include "common/util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gf_cmd_run(int argc, char **argv, gf_cli_ctx *cli);

static volatile sig_atomic_t interrupted;

static void on_int(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Copy what is new in one stream; returns 1 if data came, 0 if none, -1 on
 * error; *eof when the job ended and the stream is drained. */
static int pump(gf_client *cl, uint64_t id, gf_stream stream, uint64_t *offset, bool *eof)
{
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_LOGS;
    req.id = id;
    req.stream = stream;
    req.offset = *offset;
    int rc = gf_client_call(cl, &req, &rep, 30000);
    if (rc == GF_EINTR)
        return 0;
    if (rc || rep.op != GF_OP_LOG) {
        if (!rc)
            gf_client_report("run", &rep);
        gf_msg_clear(&rep);
        return -1;
    }
    int fd = stream == GF_STREAM_ERR ? 2 : 1;
    size_t done = 0;
    while (done < rep.data_len) {
        ssize_t w = write(fd, rep.data + done, rep.data_len - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    *offset = rep.offset;
    *eof = rep.eof;
    int got = rep.data_len > 0;
    gf_msg_clear(&rep);
    return got;
}

int gf_cmd_run(int argc, char **argv, gf_cli_ctx *cli)
{
    gf_jobopts o;
    int rc = gf_jobopts_parse(argc, argv, &o, false);
    if (rc || o.help) {
        if (o.help)
            gf_jobopts_usage(stdout, "run");
        gf_jobopts_clear(&o);
        return rc;
    }
    gf_client *cl = gf_client_open(o.config, cli, &rc);
    if (!cl) {
        gf_jobopts_clear(&o);
        return rc;
    }
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_SUBMIT;
    req.spec = o.spec;
    rc = gf_client_call(cl, &req, &rep, 60000);
    memset(&req.spec, 0, sizeof(req.spec));
    gf_jobopts_clear(&o);
    if (rc || rep.op != GF_OP_IDS || rep.n_ids != 1) {
        rc = rc ? GF_EXIT_UNAVAIL : gf_client_report("run", &rep);
        gf_msg_clear(&rep);
        gf_client_destroy(&cl);
        return rc;
    }
    uint64_t id = rep.ids[0];
    gf_msg_clear(&rep);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_int;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    uint64_t off_out = 0, off_err = 0;
    bool eof_out = false, eof_err = false, cancel_sent = false;
    rc = 0;
    while (!(eof_out && eof_err)) {
        if (interrupted && !cancel_sent) {
            cancel_sent = true;
            gf_msg c, crep;
            memset(&c, 0, sizeof(c));
            c.op = GF_OP_CANCEL;
            c.ids = &id;
            c.n_ids = 1;
            if (gf_client_call(cl, &c, &crep, 30000) == 0)
                gf_msg_clear(&crep);
            fprintf(stderr, "gpuflock run: job %llu cancelled\n", (unsigned long long)id);
        }
        int a = eof_out ? 0 : pump(cl, id, GF_STREAM_OUT, &off_out, &eof_out);
        int b = eof_err ? 0 : pump(cl, id, GF_STREAM_ERR, &off_err, &eof_err);
        if (a < 0 || b < 0) {
            rc = GF_EXIT_UNAVAIL;
            break;
        }
        if (!a && !b && !(eof_out && eof_err))
            usleep(20000);
    }
    if (rc == 0) {
        gf_msg s;
        memset(&s, 0, sizeof(s));
        s.op = GF_OP_SHOW;
        s.id = id;
        if (gf_client_call(cl, &s, &rep, 30000) != 0) {
            rc = GF_EXIT_UNAVAIL;
        } else if (rep.op != GF_OP_JOBS || rep.n_jobs != 1) {
            rc = gf_client_report("run", &rep);
        } else {
            const gf_job *j = &rep.jobs[0];
            rc = gf_job_exit_status(j);
            if (j->state == GF_STATE_CANCELLED)
                rc = 130;
            else if (j->state == GF_STATE_FAILED && j->reason && j->exit_status < 0)
                fprintf(stderr, "gpuflock run: job %llu failed: %s\n", (unsigned long long)id,
                        j->reason);
        }
        gf_msg_clear(&rep);
    }
    gf_client_destroy(&cl);
    return rc;
}
