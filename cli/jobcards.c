/* jobcards.c — taking the cards of a command job (see jobcards.h).
 *
 * Built on common/lock: a listed request is one gf_lockset (ascending order,
 * all or none); an --any request opens every configured card, waits for the
 * first it can have and keeps that one in a lockset of its own, so both
 * kinds end up as "a held lockset". The bench lock of a proof job is taken
 * before the cards, so no card sits locked and idle while a proof job waits
 * for another to finish its timing run. */
#include "cli/jobcards.h"
#include "common/jobenv.h"
#include "common/card.h"
#include "common/error.h"
#include "common/lockinfo.h"
#include "common/log.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gf_jobcards {
    const gf_config *cfg;   /* borrowed: outlives us */
    gf_lockset *set;        /* the held cards, ascending */
    gf_lock *bench;         /* proof jobs: the held bench lock; else NULL */
    char *devices;          /* GPUFLOCK_DEVICE: "0,1" */
    char *visible;          /* CUDA_VISIBLE_DEVICES: UUIDs of CUDA cards, indices of CPU ones */
    char *lock_files;       /* GPUFLOCK_LOCK_FILE: the cards' lock files */
};

/* What on_busy needs to say who holds a lock. */
typedef struct {
    const gf_config *cfg;
    const char *who;
} busy_ctx;

/* Append "item" to a comma list held in *list. */
static void list_append(char **list, const char *item)
{
    char *next = *list ? gf_strfmt("%s,%s", *list, item) : gf_strdup(item);
    free(*list);
    *list = next;
}

static char *holders_text(const char *path)
{
    gf_lock_holder *h = NULL;
    size_t n = 0;
    if (gf_lock_holders(path, &h, &n) != 0 || n == 0) {
        gf_lock_holders_free(&h, n);
        return gf_strdup("a process not in /proc/locks (it may have just let go)");
    }
    char *text = NULL;
    for (size_t i = 0; i < n; i++) {
        char one[512];
        gf_lock_holder_describe(&h[i], one, sizeof one);
        char *next = text ? gf_strfmt("%s; %s", text, one) : gf_strdup(one);
        free(text);
        text = next;
    }
    gf_lock_holders_free(&h, n);
    return text;
}

static void say_busy(const gf_lock *lock, void *arg)
{
    const busy_ctx *ctx = arg;
    const char *path = gf_lock_path(lock);
    char what[64] = "bench lock";
    for (size_t i = 0; i < ctx->cfg->n_devices; i++)
        if (strcmp(ctx->cfg->devices[i].lock, path) == 0)
            snprintf(what, sizeof what, "card %d", ctx->cfg->devices[i].index);
    if (gf_lock_gated(lock)) {
        char *waiter = holders_text(gf_lock_gate_path(lock));
        fprintf(stderr, "%s: %s (%s): an exclusive waiter is ahead at its gate (%s); waiting\n",
                ctx->who, what, path, waiter);
        free(waiter);
        return;
    }
    char *holders = holders_text(path);
    fprintf(stderr, "%s: %s (%s) is held by %s; waiting\n", ctx->who, what, path, holders);
    free(holders);
}

/* ---- the deadline shared by every lock of the job ---------------------- */

static int remaining_ms(int timeout_ms, uint64_t start_ms)
{
    if (timeout_ms < 0)
        return -1;
    uint64_t spent = gf_now_ms() - start_ms;
    return spent >= (uint64_t)timeout_ms ? 0 : timeout_ms - (int)spent;
}

/* ---- taking ------------------------------------------------------------- */

static void configured_list(const gf_config *cfg, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < cfg->n_devices && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? ", " : "",
                                 cfg->devices[i].index);
}

static int take_listed(gf_jobcards *self, const gf_jobcards_request *req, int timeout_ms,
                       const gf_lock_wait_opts *opts)
{
    for (size_t i = 0; i < req->n_cards; i++) {
        const gf_device_conf *dev = gf_config_device(self->cfg, req->cards[i]);
        if (!dev) {
            char known[256];
            configured_list(self->cfg, known, sizeof known);
            GF_ERROR("card %d is not configured (configured: %s)", req->cards[i],
                     *known ? known : "none");
            return GF_ENOENT;
        }
        int rc = gf_lockset_add(self->set, dev->index, dev->lock, self->cfg->lock_owner_uid);
        if (rc)
            return rc == GF_EINVAL ? GF_ENOENT : rc;
    }
    return gf_lockset_take(self->set, req->mode, timeout_ms, opts);
}

static int take_any(gf_jobcards *self, const gf_jobcards_request *req, int timeout_ms,
                    const gf_lock_wait_opts *opts)
{
    const gf_config *cfg = self->cfg;
    if (cfg->n_devices == 0) {
        GF_ERROR("no cards configured (no devices in %s and no CUDA card found)",
                 cfg->path ? cfg->path : "the built-in defaults");
        return GF_ECONFIG;
    }
    gf_lock **locks = gf_calloc(cfg->n_devices, sizeof *locks);
    int rc = 0;
    size_t which = 0;
    for (size_t i = 0; i < cfg->n_devices; i++)
        if (!(locks[i] = gf_lock_open(cfg->devices[i].lock, cfg->lock_owner_uid, NULL, 0))) {
            rc = GF_EIO;
            goto out_close;
        }
    rc = gf_lock_wait_any(locks, cfg->n_devices, req->mode, timeout_ms, opts, &which);
    if (rc)
        goto out_close;
    gf_lockset_adopt(self->set, cfg->devices[which].index, &locks[which]);
out_close:   /* the cards not taken (the one taken is the set's now) */
    for (size_t i = 0; i < cfg->n_devices; i++)
        gf_lock_destroy(&locks[i]);
    free(locks);
    return rc;
}

static int take_bench(gf_jobcards *self, int timeout_ms, const gf_lock_wait_opts *opts)
{
    self->bench = gf_lock_open(self->cfg->bench_lock, self->cfg->lock_owner_uid, NULL, 0);
    if (!self->bench)
        return GF_EIO;
    return gf_lock_wait(self->bench, GF_LOCK_EXCLUSIVE, timeout_ms, opts);
}

/* ---- naming the cards ---------------------------------------------------- */

static int name_cards(gf_jobcards *self)
{
    for (size_t i = 0; i < gf_lockset_count(self->set); i++) {
        const gf_device_conf *dev = gf_config_device(self->cfg, gf_lockset_index(self->set, i));
        char index[16];
        snprintf(index, sizeof index, "%d", dev->index);
        list_append(&self->devices, index);
        list_append(&self->lock_files, dev->lock);
        if (dev->kind != GF_DEVICE_CUDA) {
            list_append(&self->visible, index);
            continue;
        }
        gf_card_identity id;
        int rc = gf_card_identify(dev, &id);
        if (rc)
            return rc == GF_ENOENT ? GF_EDEVICE : rc;
        list_append(&self->visible, id.uuid);
    }
    return 0;
}

int gf_jobcards_take(const gf_config *cfg, const gf_jobcards_request *req, gf_jobcards **out)
{
    *out = NULL;
    gf_jobcards *self = gf_calloc(1, sizeof *self);
    self->cfg = cfg;
    self->set = gf_lockset_new();
    busy_ctx ctx = { .cfg = cfg, .who = req->who };
    gf_lock_wait_opts opts = { .stop = NULL, .on_busy = say_busy, .arg = &ctx };
    uint64_t start = gf_now_ms();
    int rc = req->proof ? take_bench(self, req->timeout_ms, &opts) : 0;
    if (rc)
        goto fail;
    int left = remaining_ms(req->timeout_ms, start);
    rc = req->n_cards > 0 ? take_listed(self, req, left, &opts) : take_any(self, req, left, &opts);
    if (rc)
        goto fail;
    if ((rc = name_cards(self)) != 0)
        goto fail;
    *out = self;
    return 0;
fail:   /* what was taken, let go */
    gf_jobcards_destroy(&self);
    return rc;
}

int gf_jobcards_inherit(gf_jobcards *self)
{
    if (self->bench && gf_lock_inherit(self->bench) != 0)
        return GF_EIO;
    for (size_t i = 0; i < gf_lockset_count(self->set); i++)
        if (gf_lock_inherit(gf_lockset_lock(self->set, i)) != 0)
            return GF_EIO;
    return 0;
}

void gf_jobcards_export(const gf_jobcards *self, gf_env *env, char **removed)
{
    gf_jobenv_export(env, self->visible, self->devices, self->lock_files, self->bench != NULL,
                     self->cfg->scrub_env, self->cfg->n_scrub_env, removed);
}


void gf_jobcards_destroy(gf_jobcards **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_jobcards *self = *self_p;
    gf_lockset_destroy(&self->set);
    gf_lock_destroy(&self->bench);
    free(self->devices);
    free(self->visible);
    free(self->lock_files);
    free(self);
    *self_p = NULL;
}
