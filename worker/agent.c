/* agent.c — the worker's event loop (see agent.h).
 *
 * One thread: a zmq_poll over the DEALER to the broker (net/dealer.h) and
 * the signal pipe that worker/main.c fills (SIGCHLD for ended jobs,
 * SIGTERM/SIGINT to stop),
 * with a short timeout while a job
 * waits for a lock held by someone else (its lock is tried again each
 * round, never blocking the loop). Diarize jobs run on threads of this
 * process (worker/diarjob.h) and wake the loop through an eventfd when they
 * have progress to report or end; their pipelines stay loaded in a pool
 * between jobs. Command jobs start under a guard made ready ahead by the
 * guards' fork server, asked at the end of each turn and answering on a
 * socket this loop polls (worker/spare.h), when one waits; each in a
 * cgroup of its own where the worker has a cgroup folder (worker/cgroup.h,
 * opened here at start: the supervision the worker logs and reports in
 * READY). A job whose guard has ended but whose killed processes have not
 * all gone yet is asked again every DRAIN_POLL_MS. */
#include "worker/agent.h"

#include "worker/cgroup.h"
#include "net/dealer.h"
#include "common/error.h"
#include "common/log.h"
#include "net/proto.h"
#include "common/util.h"
#include "diar/kernel_plan.h"
#include "net/dealer.h"
#include "route/plan.h"
#include "worker/runner.h"
#include "worker/spare.h"

#include <json-c/json.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#define LOCK_RETRY_MS 10
/* SIGKILLed processes go within a few ms; cgroup.events is one pread */
#define DRAIN_POLL_MS 2

/* A job on this worker: waiting for its lock, running, or ended with its
 * result not yet known to be safe with the broker. */
typedef struct slot {
    gf_run *run;
    char said[512];           /* last waiting message sent */
    uint64_t kill_at;         /* monotonic ms of the SIGKILL, 0: none */
    bool done;                /* ended: on `settling`, its result kept for a resend */
    gf_msg result;
    uint64_t sent_at;         /* monotonic ms the result was last sent */
    uint64_t seq;             /* arrival order on this worker */
    struct slot *next;
} slot;

struct gf_agent {
    const gf_config *cfg;
    int device;
    gf_card_identity card;
    void *ctx;                /* libzmq */
    gf_dealer *link;          /* to the broker's worker endpoint (net/dealer.h) */
    int sigfd;                /* read end of main's signal pipe (borrowed) */
    slot *slots;              /* jobs not ended, newest first */
    /* ended jobs whose results may not be safe with the broker yet, in the
     * order they ended (kept off `slots`, which every turn walks: a busy
     * worker ends hundreds of jobs within the two beats they are kept) */
    slot *settling, *settling_tail;
    uint64_t max_settled_id;  /* the highest job id that ever settled here */
    uint64_t last_heard;      /* monotonic ms of the broker's last message */
    uint64_t next_beat;
    bool stopping;
    gf_route_plan *plan;      /* the card's route plan, made once: applied by every GPU
                                 backend of `pool`, sent in READY */
    gf_diar_pool *pool;       /* diarize pipelines kept between jobs */
    gf_spare *spare;          /* the next command job's guard, made ready ahead */
    gf_cgroup *cgroups;       /* the folder of the jobs' cgroups; NULL: process groups */
    char *supervision;        /* how jobs are supervised, as READY says it */
    int wakefd;               /* eventfd: a diarize thread has news */
    uint64_t arrivals;        /* jobs received so far (slot.seq) */
};

gf_agent *gf_agent_new(const gf_config *cfg, int device, const gf_card_identity *card,
                       int signal_fd)
{
    gf_agent *self = gf_calloc(1, sizeof(*self));
    self->cfg = cfg;
    self->device = device;
    self->card = *card;
    self->sigfd = signal_fd;
    self->wakefd = -1;
    /* The route plan, once: the evidence read once, the card as main read it. */
    self->plan = gf_kernel_plan_new(&self->card);
    if (!self->plan) {
        gf_agent_destroy(&self);
        return NULL;
    }
    self->ctx = zmq_ctx_new();
    char err[512];
    self->link = gf_dealer_connect(self->ctx, cfg->worker_endpoint, cfg, false, err, sizeof(err));
    if (!self->link)
        GF_ERROR("broker: %s", err);
    self->pool = gf_diar_pool_new(cfg, self->plan);
    char why[512] = "worker.cgroups is false";
    if (cfg->cgroups)
        self->cgroups = gf_cgroup_open(why, sizeof why);
    if (self->cgroups) {
        self->supervision = gf_strfmt("cgroup %s", gf_cgroup_path(self->cgroups));
        GF_INFO("job supervision: a cgroup per job in %s%s", gf_cgroup_path(self->cgroups),
                gf_cgroup_has_kill(self->cgroups) ? "" : " (no cgroup.kill: killed pid by pid)");
    } else {
        self->supervision = gf_strdup("process group: a process that calls setsid escapes");
        GF_WARN("job supervision: by process group only (%s): a process of a job that calls "
                "setsid escapes it, keeps running and keeps its card", why);
    }
    char *guard = gf_beside_self("gpuflock-guard");
    if (guard)
        self->spare = gf_spare_new(guard, self->cgroups);   /* spares born in job cgroups */
    free(guard);
    self->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!self->link || self->wakefd < 0) {
        if (self->wakefd < 0)
            GF_ERROR("eventfd: %s", strerror(errno));
        gf_agent_destroy(&self);
        return NULL;
    }
    return self;
}

static void free_slot(slot *s)
{
    gf_run_destroy(&s->run);
    gf_msg_clear(&s->result);
    free(s);
}

void gf_agent_destroy(gf_agent **self_p)
{
    gf_agent *self = *self_p;
    if (!self)
        return;
    slot **const lists[] = { &self->slots, &self->settling };
    for (size_t l = 0; l < 2; l++)
        while (*lists[l]) {
            slot *s = *lists[l];
            *lists[l] = s->next;
            free_slot(s);
        }
    gf_spare_destroy(&self->spare);
    gf_cgroup_destroy(&self->cgroups);    /* after the slots: their cgroups are gone */
    free(self->supervision);
    gf_dealer_destroy(&self->link);
    if (self->ctx)
        zmq_ctx_term(self->ctx);
    gf_diar_pool_destroy(&self->pool);    /* after the slots: their threads are joined */
    if (self->wakefd >= 0)
        close(self->wakefd);
    gf_route_plan_destroy(&self->plan);   /* after the pool: its backends applied it */
    free(self);
    *self_p = NULL;
}

static void tell(gf_agent *self, gf_msg *m)
{
    int rc = gf_dealer_send(self->link, m);
    if (rc == GF_ETIMEDOUT)
        GF_DEBUG("'%s' not sent: no broker has taken our messages for a while",
                 gf_proto_op_name(m->op));
    else if (rc)
        GF_WARN("sending '%s' to the broker: %s", gf_proto_op_name(m->op), gf_strerror(rc));
}

static void send_ready(gf_agent *self)
{
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_READY;
    m.device = self->device;
    m.pid = (int32_t)getpid();
    m.card = self->card;
    m.plan = gf_route_plan_text(self->plan);   /* the plan the backends apply, as it stands */
    if (strlen(m.plan) > GF_PROTO_MAX_PLAN) {
        GF_WARN("route plan: %zu bytes of JSON, more than a READY carries: not sent",
                strlen(m.plan));
        free(m.plan);
        m.plan = NULL;
    }
    m.supervision = gf_strdup(self->supervision);
    size_t n = 0;
    for (slot *s = self->slots; s; s = s->next)
        n++;
    for (slot *s = self->settling; s; s = s->next)
        n++;
    m.running = gf_calloc(n ? n : 1, sizeof(gf_running));
    slot *const lists[] = { self->slots, self->settling };
    for (size_t l = 0; l < 2; l++)
        for (slot *s = lists[l]; s; s = s->next) {
            gf_running *r = &m.running[m.n_running++];
            r->id = gf_run_id(s->run);
            r->attempt = gf_run_attempt(s->run);
            r->pid = s->done ? 0 : gf_run_pid(s->run) > 0 ? gf_run_pid(s->run) : 0;
            r->started_ms = gf_run_started_ms(s->run);
            r->done = s->done;
        }
    tell(self, &m);
    gf_msg_clear(&m);
    /* and the results the broker may not have */
    for (slot *s = self->settling; s; s = s->next) {
        tell(self, &s->result);
        s->sent_at = gf_now_ms();
    }
}

/* The slot of a job, not ended or settling. Job ids grow, so a job newer
 * than every settled one (the usual assignment) needs no walk of those. */
static slot *find(gf_agent *self, uint64_t id, int32_t attempt)
{
    for (slot *s = self->slots; s; s = s->next)
        if (gf_run_id(s->run) == id && gf_run_attempt(s->run) == attempt)
            return s;
    if (id > self->max_settled_id)
        return NULL;
    for (slot *s = self->settling; s; s = s->next)
        if (gf_run_id(s->run) == id && gf_run_attempt(s->run) == attempt)
            return s;
    return NULL;
}

/* The job ended: its result goes to the broker, and the slot from `slots`
 * to the end of `settling`. Callers walking `slots` take s->next first. */
static void finish_slot(gf_agent *self, slot *s, gf_msg *result)
{
    s->done = true;
    s->result = *result;
    memset(result, 0, sizeof(*result));
    tell(self, &s->result);
    s->sent_at = gf_now_ms();
    for (slot **pp = &self->slots; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    s->next = NULL;
    if (self->settling_tail)
        self->settling_tail->next = s;
    else
        self->settling = s;
    self->settling_tail = s;
    if (gf_run_id(s->run) > self->max_settled_id)
        self->max_settled_id = gf_run_id(s->run);
}

/* Forget the settled results sent more than `age` ms before now. */
static void drop_settled(gf_agent *self, uint64_t now, uint64_t age)
{
    while (self->settling && now - self->settling->sent_at > age) {
        slot *s = self->settling;
        self->settling = s->next;
        if (!self->settling)
            self->settling_tail = NULL;
        free_slot(s);
    }
}

/* Is s an exclusive job waiting behind another job of ours on one of its
 * cards (the broker hands such a job over ahead)? It starts when that one
 * ends: trying its lock before would only find our own job there, or, while
 * both wait for a holder outside gpuflock, could start it first. */
static bool behind_own_job(gf_agent *self, const slot *s)
{
    if (!gf_run_exclusive(s->run))
        return false;
    for (const slot *o = self->slots; o; o = o->next)
        if (o != s && (gf_run_started(o->run) || o->seq < s->seq) &&
            gf_run_shares_card(o->run, s->run))
            return true;
    return false;
}

/* Try the locks of a waiting job; start it when they are had. */
static void advance(gf_agent *self, slot *s)
{
    if (gf_run_started(s->run) || behind_own_job(self, s))
        return;
    char why[512];
    int rc = gf_run_try_locks(s->run, why, sizeof(why));
    if (rc == GF_EBUSY) {
        if (strcmp(why, s->said) != 0) {
            snprintf(s->said, sizeof(s->said), "%s", why);
            gf_msg p;
            memset(&p, 0, sizeof(p));
            p.op = GF_OP_PROGRESS;
            p.id = gf_run_id(s->run);
            p.attempt = gf_run_attempt(s->run);
            p.message = gf_strdup(why);
            tell(self, &p);
            GF_INFO("job %llu: %s", (unsigned long long)p.id, why);
            gf_msg_clear(&p);
        }
        return;
    }
    if (rc == 0)
        rc = gf_run_start(s->run, why, sizeof(why));
    if (rc) {
        GF_WARN("job %llu cannot start: %s", (unsigned long long)gf_run_id(s->run), why);
        gf_msg r;
        gf_run_result_unstarted(s->run, why, &r);
        finish_slot(self, s, &r);
        return;
    }
    gf_msg p;
    memset(&p, 0, sizeof(p));
    p.op = GF_OP_PROGRESS;
    p.id = gf_run_id(s->run);
    p.attempt = gf_run_attempt(s->run);
    p.pid = (int32_t)gf_run_pid(s->run);
    p.started_ms = gf_run_started_ms(s->run);
    tell(self, &p);
}

static void on_job(gf_agent *self, gf_msg *m)
{
    if (find(self, m->id, m->attempt))
        return;     /* a duplicate assignment: never two runs of one job */
    slot *s = gf_calloc(1, sizeof(*s));
    s->seq = ++self->arrivals;
    s->run = gf_run_new(m, self->cfg);
    gf_run_set_diar(s->run, self->pool, self->wakefd);
    gf_run_set_spare(s->run, self->spare);
    gf_run_set_cgroups(s->run, self->cgroups);
    if (m->spec.kind == GF_JOB_DIARIZE && m->spec.diar)
        GF_INFO("job %llu: diarize %s", (unsigned long long)m->id, m->spec.diar->audio);
    s->next = self->slots;
    self->slots = s;
    if (self->stopping) {
        gf_msg r;
        gf_run_result_unstarted(s->run, "worker stopping", &r);
        finish_slot(self, s, &r);
        return;
    }
    advance(self, s);
}

static void on_kill(gf_agent *self, gf_msg *m)
{
    slot *s = find(self, m->id, m->attempt);
    if (!s || s->done)
        return;
    if (!gf_run_started(s->run)) {
        /* a recall, a yield or a requeue of a job not started: handed back */
        gf_msg r;
        gf_run_result_unstarted(s->run, m->message ? m->message : "killed before it started", &r);
        if (m->kill_mode != GF_KILL_STOP)
            r.outcome = GF_OUTCOME_RECALLED;
        finish_slot(self, s, &r);
        return;
    }
    if (m->kill_mode == GF_KILL_RECALL)
        return;                       /* it started: it runs here (the broker learns it) */
    if (m->kill_mode == GF_KILL_YIELD || m->kill_mode == GF_KILL_REQUEUE) {
        int rc = gf_run_yield(s->run, m->kill_mode == GF_KILL_REQUEUE);
        if (rc > 0 && !s->kill_at)
            s->kill_at = gf_now_ms() + (uint64_t)(m->grace_s > 0 ? m->grace_s : 0) * 1000;
        if (rc < 0)
            GF_INFO("job %llu: not yieldable, left to run", (unsigned long long)m->id);
        return;
    }
    if (m->grace_s <= 0) {
        gf_run_signal(s->run, SIGKILL);
    } else {
        gf_run_signal(s->run, SIGTERM);
        gf_run_signal(s->run, SIGCONT);
        s->kill_at = gf_now_ms() + (uint64_t)m->grace_s * 1000;
    }
}

/* PROGRESS for a diarize job whose windows moved since the last one. */
static void report_one(gf_agent *self, slot *s)
{
    int64_t done, total;
    if (!gf_run_progress(s->run, &done, &total))
        return;
    gf_msg p;
    memset(&p, 0, sizeof(p));
    p.op = GF_OP_PROGRESS;
    p.id = gf_run_id(s->run);
    p.attempt = gf_run_attempt(s->run);
    p.pid = gf_run_pid(s->run) > 0 ? (int32_t)gf_run_pid(s->run) : 0;
    p.started_ms = gf_run_started_ms(s->run);
    p.done = done;
    p.total = total;
    tell(self, &p);
}

static void report_progress(gf_agent *self)
{
    for (slot *s = self->slots; s; s = s->next)
        report_one(self, s);
}

static void reap(gf_agent *self)
{
    for (slot *s = self->slots, *next; s; s = next) {
        next = s->next;
        gf_msg r;
        if (gf_run_reap(s->run, &r)) {
            report_one(self, s);     /* a diarize job's last windows, before its result */
            finish_slot(self, s, &r);
        }
    }
}

static void reconnect(gf_agent *self, const char *why)
{
    GF_WARN("broker %s: reconnecting to %s", why, self->cfg->worker_endpoint);
    self->last_heard = gf_now_ms();
    char err[512];
    if (gf_dealer_reconnect(self->link, err, sizeof(err)) == 0)
        send_ready(self);
    else
        GF_WARN("broker: %s", err);
}

/* A started job must stop (this worker stops, or the broker went): one that
 * can checkpoint yields, so that its next run resumes (a diarize job at its
 * next batch boundary, with no deadline: killing it would drop the
 * checkpoint); the others get SIGTERM, and SIGKILL after kill_grace_s. */
static void stop_run(gf_agent *self, slot *s, uint64_t now)
{
    int rc = gf_run_yield(s->run, false);
    if (rc < 0) {
        gf_run_signal(s->run, SIGTERM);
        gf_run_signal(s->run, SIGCONT);
    }
    if (rc != 0)
        s->kill_at = now + (uint64_t)self->cfg->kill_grace_s * 1000;
}

static void on_broker(gf_agent *self)
{
    for (;;) {
        gf_msg m;
        char err[256];
        int rc = gf_dealer_recv(self->link, 0, &m, err, sizeof(err));
        if (rc == GF_ETIMEDOUT || rc == GF_EINTR || rc == GF_EIO)
            return;
        uint64_t now = gf_now_ms();
        self->last_heard = now;
        if (rc) {
            GF_WARN("message from the broker refused: %s", err);
            continue;
        }
        switch (m.op) {
        case GF_OP_HEARTBEAT: {
            /* results sent well before this beat are safe with the broker */
            drop_settled(self, now, 2 * (uint64_t)self->cfg->heartbeat_interval_ms);
            break;
        }
        case GF_OP_JOB: on_job(self, &m); break;
        case GF_OP_KILL: on_kill(self, &m); break;
        case GF_OP_DISCONNECT:
            if (m.message && strncmp(m.message, "not registered", 14) == 0) {
                send_ready(self);
            } else {
                /* the broker shuts down (it requeued our jobs) or replaced
                 * us: our jobs must stop; then register again */
                GF_INFO("broker says: %s", m.message ? m.message : "disconnect");
                for (slot *s = self->slots; s; s = s->next)
                    if (gf_run_started(s->run))
                        stop_run(self, s, now);
                send_ready(self);
            }
            break;
        case GF_OP_ERROR:
            GF_WARN("broker error %d: %s", m.code, m.message ? m.message : "");
            break;
        default:
            GF_WARN("unexpected '%s' from the broker", gf_proto_op_name(m.op));
        }
        gf_msg_clear(&m);
    }
}

static bool any_running(gf_agent *self)
{
    for (slot *s = self->slots; s; s = s->next)
        if (gf_run_started(s->run))
            return true;
    return false;
}

static void begin_stop(gf_agent *self)
{
    self->stopping = true;
    uint64_t now = gf_now_ms();
    for (slot *s = self->slots, *next; s; s = next) {
        next = s->next;
        if (gf_run_started(s->run)) {
            stop_run(self, s, now);
        } else {
            gf_msg r;
            gf_run_result_unstarted(s->run, "worker stopping", &r);
            finish_slot(self, s, &r);
        }
    }
}

int gf_agent_run(gf_agent *self)
{
    self->last_heard = gf_now_ms();
    send_ready(self);
    uint64_t interval = (uint64_t)self->cfg->heartbeat_interval_ms;
    uint64_t dead_after = interval * (uint64_t)self->cfg->heartbeat_liveness;
    for (;;) {
        uint64_t now = gf_now_ms();
        if (self->stopping && !any_running(self))
            break;
        long timeout = self->next_beat > now ? (long)(self->next_beat - now) : 0;
        for (slot *s = self->slots; s; s = s->next) {
            if (!gf_run_started(s->run) && timeout > LOCK_RETRY_MS &&
                !behind_own_job(self, s))
                timeout = LOCK_RETRY_MS;
            if (s->kill_at && timeout > 50)
                timeout = 50;
            if (gf_run_draining(s->run) && timeout > DRAIN_POLL_MS)
                timeout = DRAIN_POLL_MS;
        }
        zmq_pollitem_t items[4] = {
            { NULL, self->sigfd, ZMQ_POLLIN, 0 },
            { NULL, self->wakefd, ZMQ_POLLIN, 0 },
            { NULL, self->spare ? gf_spare_fd(self->spare) : -1, ZMQ_POLLIN, 0 },
        };
        gf_dealer_pollitem(self->link, &items[3]);
        int rc = zmq_poll(items, 4, timeout);
        if (rc < 0 && errno != EINTR) {
            GF_ERROR("zmq_poll: %s", zmq_strerror(errno));
            return GF_EIO;
        }
        if (rc > 0 && (items[0].revents & ZMQ_POLLIN)) {
            unsigned char sig[64];
            ssize_t got;
            while ((got = read(self->sigfd, sig, sizeof(sig))) > 0)
                for (ssize_t i = 0; i < got; i++)
                    if ((sig[i] == SIGTERM || sig[i] == SIGINT) && !self->stopping) {
                        GF_INFO("stopping: %s", strsignal(sig[i]));
                        begin_stop(self);
                    } else if (sig[i] == SIGHUP) {
                        gf_log_reopen();      /* after a rotation (the broker passes it on) */
                    }
            reap(self);
        }
        if (rc > 0 && (items[1].revents & ZMQ_POLLIN)) {
            uint64_t count;
            ssize_t got = read(self->wakefd, &count, sizeof(count));
            (void)got;      /* drained; the slots say what happened */
        }
        if (rc > 0 && (items[2].revents & ZMQ_POLLIN))
            gf_spare_collect(self->spare);
        if (rc > 0 && (items[3].revents & ZMQ_POLLIN))
            on_broker(self);
        now = gf_now_ms();
        for (slot *s = self->slots, *next; s; s = next) {
            next = s->next;
            advance(self, s);
            if (!s->done && s->kill_at && now >= s->kill_at) {
                gf_run_signal(s->run, SIGKILL);
                s->kill_at = 0;
            }
        }
        report_progress(self);
        reap(self);
        if (now >= self->next_beat) {
            self->next_beat = now + interval;
            gf_msg hb;
            memset(&hb, 0, sizeof(hb));
            hb.op = GF_OP_HEARTBEAT;
            tell(self, &hb);
            gf_log_check_file();      /* a rotation no signal told of */
            if (now - self->last_heard > dead_after)
                reconnect(self, "silent");
        }
        /* the next command job's guard: asked for now, ready a turn later */
        if (self->spare && !self->stopping)
            gf_spare_fill(self->spare);
    }
    gf_msg d;
    memset(&d, 0, sizeof(d));
    d.op = GF_OP_DISCONNECT;
    d.message = gf_strdup("worker stopped");
    tell(self, &d);
    gf_msg_clear(&d);
    return 0;
}
