/* jobfmt.c — JSON and text forms of jobs and workers (see jobfmt.h). */
#include "cli/jobfmt.h"

#include "common/card.h"
#include "common/util.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void gf_fmt_duration(int64_t ms, char *buf, size_t len)
{
    if (ms < 0)
        ms = 0;
    int64_t s = ms / 1000;
    if (s >= 3600)
        snprintf(buf, len, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else if (s >= 60)
        snprintf(buf, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
    else if (s >= 10)
        snprintf(buf, len, "%llds", (long long)s);
    else
        snprintf(buf, len, "%.1fs", (double)ms / 1000.0);
}

void gf_fmt_cards(const gf_job *j, char *buf, size_t len)
{
    if (j->n_cards == 0 || j->state == GF_STATE_PENDING) {
        snprintf(buf, len, "-");
        return;
    }
    size_t l = 0;
    buf[0] = 0;
    for (size_t i = 0; i < j->n_cards && l < len; i++)
        l += (size_t)snprintf(buf + l, len - l, "%s%d", i ? "," : "", j->cards[i]);
}

void gf_fmt_request(const gf_job_spec *sp, char *buf, size_t len)
{
    const char *mode = sp->mode == GF_MODE_SHARED ? "shared" : "exclusive";
    switch (sp->req) {
    case GF_REQ_GPU: snprintf(buf, len, "card %d, %s", sp->gpu, mode); break;
    case GF_REQ_GPUS: snprintf(buf, len, "%d cards, %s", sp->gpus, mode); break;
    default: snprintf(buf, len, "any card, %s", mode); break;
    }
}

static json_object *strv_json(char *const *v, size_t n)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(a, json_object_new_string(v[i]));
    return a;
}

static json_object *time_json(int64_t ms)
{
    return ms ? json_object_new_int64(ms) : NULL;
}

json_object *gf_job_json(const gf_job *j)
{
    json_object *o = json_object_new_object();
    const gf_job_spec *sp = &j->spec;
    json_object_object_add(o, "id", json_object_new_int64((int64_t)j->id));
    json_object_object_add(o, "name", sp->name ? json_object_new_string(sp->name) : NULL);
    json_object_object_add(o, "state", json_object_new_string(gf_job_state_name(j->state)));
    json_object_object_add(o, "user", j->user ? json_object_new_string(j->user) : NULL);
    json_object_object_add(o, "uid", json_object_new_int64(j->uid));
    json_object_object_add(o, "argv", strv_json(sp->argv, sp->argc));
    json_object_object_add(o, "cwd", sp->cwd ? json_object_new_string(sp->cwd) : NULL);
    json_object_object_add(o, "request", json_object_new_string(
        sp->req == GF_REQ_GPU ? "gpu" : sp->req == GF_REQ_GPUS ? "gpus" : "any"));
    if (sp->req == GF_REQ_GPU)
        json_object_object_add(o, "gpu", json_object_new_int(sp->gpu));
    if (sp->req == GF_REQ_GPUS)
        json_object_object_add(o, "gpus", json_object_new_int(sp->gpus));
    json_object_object_add(o, "mode", json_object_new_string(
        sp->mode == GF_MODE_SHARED ? "shared" : "exclusive"));
    json_object_object_add(o, "proof", json_object_new_boolean(sp->proof));
    json_object_object_add(o, "priority", json_object_new_int(sp->priority));
    json_object_object_add(o, "time_limit_s", sp->time_limit_s ? json_object_new_int64(sp->time_limit_s) : NULL);
    json_object *after = json_object_new_array();
    for (size_t i = 0; i < sp->n_after; i++)
        json_object_array_add(after, json_object_new_int64((int64_t)sp->after[i]));
    json_object_object_add(o, "after", after);
    json_object_object_add(o, "no_requeue", json_object_new_boolean(sp->no_requeue));
    json_object_object_add(o, "array_index", sp->array_index >= 0 ? json_object_new_int64(sp->array_index) : NULL);
    json_object *cards = json_object_new_array();
    for (size_t i = 0; i < j->n_cards; i++)
        json_object_array_add(cards, json_object_new_int(j->cards[i]));
    json_object_object_add(o, "cards", cards);
    json_object_object_add(o, "attempts", json_object_new_int(j->attempts));
    json_object_object_add(o, "yields", json_object_new_int(j->yields));
    json_object_object_add(o, "held", json_object_new_boolean(j->held));
    if (j->held)
        json_object_object_add(o, "held_by_uid", json_object_new_int64(j->held_by));
    if (sp->yield_sig > 0) {
        json_object *y = json_object_new_object();
        json_object_object_add(y, "signal", json_object_new_int(sp->yield_sig));
        json_object_object_add(y, "grace_s", json_object_new_int(sp->yield_grace_s));
        json_object_object_add(o, "yieldable", y);
    } else {
        json_object_object_add(o, "yieldable", json_object_new_boolean(sp->kind == GF_JOB_DIARIZE));
    }
    json_object_object_add(o, "submitted_ms", time_json(j->submitted_ms));
    json_object_object_add(o, "started_ms", time_json(j->started_ms));
    json_object_object_add(o, "ended_ms", time_json(j->ended_ms));
    json_object_object_add(o, "exit_status", j->exit_status >= 0 ? json_object_new_int(j->exit_status) : NULL);
    json_object_object_add(o, "signal", j->term_signal ? json_object_new_int(j->term_signal) : NULL);
    json_object_object_add(o, "cpu_user_ms", json_object_new_int64(j->cpu_user_ms));
    json_object_object_add(o, "cpu_sys_ms", json_object_new_int64(j->cpu_sys_ms));
    json_object_object_add(o, "maxrss_kb", json_object_new_int64(j->maxrss_kb));
    json_object_object_add(o, "reason", j->reason ? json_object_new_string(j->reason) : NULL);
    json_object_object_add(o, "stdout", j->out_path ? json_object_new_string(j->out_path) : NULL);
    json_object_object_add(o, "stderr", j->err_path ? json_object_new_string(j->err_path) : NULL);
    json_object_object_add(o, "kind", json_object_new_string(
        sp->kind == GF_JOB_DIARIZE ? "diarize" : "command"));
    if (sp->diar) {
        const gf_diar_spec *d = sp->diar;
        json_object *dj = json_object_new_object();
        json_object_object_add(dj, "audio", json_object_new_string(d->audio));
        json_object_object_add(dj, "rttm", json_object_new_string(d->rttm));
        json_object_object_add(dj, "json", json_object_new_boolean(d->json));
        json_object_object_add(dj, "intermediates", d->intermediates ? json_object_new_string(d->intermediates) : NULL);
        json_object_object_add(dj, "models", d->models ? json_object_new_string(d->models) : NULL);
        json_object_object_add(dj, "num_speakers", d->num_speakers ? json_object_new_int(d->num_speakers) : NULL);
        json_object_object_add(dj, "min_speakers", d->min_speakers ? json_object_new_int(d->min_speakers) : NULL);
        json_object_object_add(dj, "max_speakers", d->max_speakers ? json_object_new_int(d->max_speakers) : NULL);
        json_object_object_add(o, "diarize", dj);
        json_object_object_add(o, "progress_done", json_object_new_int64(j->progress_done));
        json_object_object_add(o, "progress_total", json_object_new_int64(j->progress_total));
        int pct = gf_job_progress_percent(j);
        json_object_object_add(o, "progress_percent", pct >= 0 ? json_object_new_int(pct) : NULL);
    }
    json_object *st = json_object_new_object();
    for (size_t i = 0; i < j->n_stats; i++)
        json_object_object_add(st, j->stats[i].key, j->stats[i].is_float
                                                        ? json_object_new_double(j->stats[i].f)
                                                        : json_object_new_int64(j->stats[i].i));
    json_object_object_add(o, "stats", st);
    return o;
}

int gf_job_progress_percent(const gf_job *j)
{
    if (j->progress_total <= 0)
        return -1;
    return (int)(100 * j->progress_done / j->progress_total);
}

json_object *gf_worker_json(const gf_worker_info *w)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "device", json_object_new_int(w->device));
    json_object_object_add(o, "state", json_object_new_string(w->state ? w->state : "?"));
    json_object_object_add(o, "pid", w->pid ? json_object_new_int(w->pid) : NULL);
    json_object_object_add(o, "card", gf_card_to_json(&w->card));
    json_object *jobs = json_object_new_array();
    for (size_t i = 0; i < w->n_jobs; i++)
        json_object_array_add(jobs, json_object_new_int64((int64_t)w->jobs[i]));
    json_object_object_add(o, "jobs", jobs);
    json_object *plan = w->plan ? json_tokener_parse(w->plan) : NULL;
    json_object_object_add(o, "plan", plan ? plan : w->plan ? json_object_new_string(w->plan) : NULL);
    json_object_object_add(o, "supervision",
                           w->supervision ? json_object_new_string(w->supervision) : NULL);
    json_object_object_add(o, "drain", w->drain ? json_object_new_string(w->drain) : NULL);
    json_object *ck = json_object_new_object();
    for (size_t i = 0; i < w->n_stats; i++)
        json_object_object_add(ck, w->stats[i].key, w->stats[i].is_float
                                                       ? json_object_new_double(w->stats[i].f)
                                                       : json_object_new_int64(w->stats[i].i));
    json_object_object_add(o, "checkpoint_stats", ck);
    json_object_object_add(o, "drain_reason",
                           w->drain_reason ? json_object_new_string(w->drain_reason) : NULL);
    json_object_object_add(o, "last_seen_ms", w->last_seen_ms ? json_object_new_int64(w->last_seen_ms) : NULL);
    return o;
}

static void print_time(FILE *out, const char *key, int64_t ms)
{
    if (!ms) {
        fprintf(out, "%-12s -\n", key);
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    char buf[64];
    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(out, "%-12s %s.%03lld\n", key, buf, (long long)(ms % 1000));
}

void gf_job_print(FILE *out, const gf_job *j)
{
    const gf_job_spec *sp = &j->spec;
    char buf[256];
    fprintf(out, "%-12s %llu\n", "id:", (unsigned long long)j->id);
    fprintf(out, "%-12s %s\n", "name:", sp->name ? sp->name : "-");
    fprintf(out, "%-12s %s\n", "state:", gf_job_state_name(j->state));
    if (j->reason)
        fprintf(out, "%-12s %s\n", "reason:", j->reason);
    fprintf(out, "%-12s %s (uid %u)\n", "user:", j->user ? j->user : "?", j->uid);
    fprintf(out, "%-12s", "command:");
    for (size_t i = 0; i < sp->argc; i++)
        fprintf(out, " %s", sp->argv[i]);
    fprintf(out, "\n%-12s %s\n", "cwd:", sp->cwd ? sp->cwd : "-");
    if (sp->diar) {
        const gf_diar_spec *d = sp->diar;
        fprintf(out, "%-12s %s -> %s%s\n", "diarize:", d->audio, d->rttm, d->json ? " (+ .json)" : "");
        if (d->models)
            fprintf(out, "%-12s %s\n", "models:", d->models);
        if (d->num_speakers)
            fprintf(out, "%-12s %d\n", "speakers:", d->num_speakers);
        else if (d->min_speakers || d->max_speakers)
            fprintf(out, "%-12s %d..%d\n", "speakers:", d->min_speakers, d->max_speakers);
        if (d->intermediates)
            fprintf(out, "%-12s %s\n", "saved in:", d->intermediates);
        /* the recipe's knobs as asked (0: the recipe's own value; `gpuflock
         * diarize` always sends them) */
        char th[32] = "the recipe's", fa[32] = "the recipe's", fb[32] = "the recipe's";
        if (d->threshold > 0)
            snprintf(th, sizeof th, "%g", d->threshold);
        if (d->fa > 0)
            snprintf(fa, sizeof fa, "%g", d->fa);
        if (d->fb > 0)
            snprintf(fb, sizeof fb, "%g", d->fb);
        fprintf(out, "%-12s clustering.threshold %s, Fa %s, Fb %s, min_duration_off %g s, "
                     "embedding_exclude_overlap %s, segmentation_step %g\n", "recipe:", th, fa,
                fb, d->min_duration_off, d->keep_overlap ? "off" : "on",
                d->segmentation_step > 0 ? d->segmentation_step : 0.1);
        int pct = gf_job_progress_percent(j);
        if (pct >= 0)
            fprintf(out, "%-12s %d%% (%lld/%lld windows)\n", "progress:", pct,
                    (long long)j->progress_done, (long long)j->progress_total);
        else
            fprintf(out, "%-12s -\n", "progress:");
        bool trained = false;
        for (size_t i = 0; i < j->n_stats; i++)
            trained |= strcmp(j->stats[i].key, "diarize.trained_vad") == 0 && j->stats[i].i;
        for (size_t i = 0; i < j->n_stats; i++)
            if (strcmp(j->stats[i].key, "diarize.weight_free") == 0)
                fprintf(out, "%-12s %s\n", "mode:", !j->stats[i].i ? "neural"
                        : trained ? "weight-free (no model files: trained voice activity, fbank "
                                    "statistics)"
                                  : "weight-free (no model files: energy voice activity, fbank "
                                    "statistics)");
    }
    gf_fmt_request(sp, buf, sizeof(buf));
    fprintf(out, "%-12s %s%s\n", "request:", buf, sp->proof ? ", proof" : "");
    gf_fmt_cards(j, buf, sizeof(buf));
    fprintf(out, "%-12s %s\n", "cards:", j->n_cards ? buf : "-");
    fprintf(out, "%-12s %d\n", "priority:", sp->priority);
    if (sp->time_limit_s)
        fprintf(out, "%-12s %lld s\n", "time limit:", (long long)sp->time_limit_s);
    if (sp->n_after) {
        fprintf(out, "%-12s", "after:");
        for (size_t i = 0; i < sp->n_after; i++)
            fprintf(out, "%s%llu", i ? "," : " ", (unsigned long long)sp->after[i]);
        fprintf(out, "\n");
    }
    if (sp->array_index >= 0)
        fprintf(out, "%-12s %lld\n", "array index:", (long long)sp->array_index);
    fprintf(out, "%-12s %d%s\n", "attempts:", j->attempts, sp->no_requeue ? " (no requeue)" : "");
    if (j->yields)
        fprintf(out, "%-12s %d (yielded, requeued or moved: not counted as attempts)\n",
                "yields:", j->yields);
    if (sp->yield_sig > 0)
        fprintf(out, "%-12s signal %d, then %d s to exit %d (checkpointed)\n", "yieldable:",
                sp->yield_sig, sp->yield_grace_s, GF_EXIT_CHECKPOINTED);
    else if (sp->kind == GF_JOB_DIARIZE)
        fprintf(out, "%-12s yes (checkpoints its windows)\n", "yieldable:");
    print_time(out, "submitted:", j->submitted_ms);
    print_time(out, "started:", j->started_ms);
    print_time(out, "ended:", j->ended_ms);
    if (j->state == GF_STATE_DONE || j->state == GF_STATE_FAILED) {
        if (j->term_signal)
            fprintf(out, "%-12s killed by signal %d\n", "exit:", j->term_signal);
        else if (j->exit_status >= 0)
            fprintf(out, "%-12s %d\n", "exit:", j->exit_status);
        fprintf(out, "%-12s user %.3f s, system %.3f s\n", "cpu:", (double)j->cpu_user_ms / 1000,
                (double)j->cpu_sys_ms / 1000);
        fprintf(out, "%-12s %.1f MiB\n", "peak rss:", (double)j->maxrss_kb / 1024);
    }
    if (j->out_path) {
        /* a stream cut at spool.max_bytes says so beside its file */
        const char *keys[2] = { "spool.stdout_cut_bytes", "spool.stderr_cut_bytes" };
        const char *names[2] = { "stdout:", "stderr:" }, *paths[2] = { j->out_path, j->err_path };
        for (int k = 0; k < 2; k++) {
            long long cut = 0;
            for (size_t i = 0; i < j->n_stats; i++)
                if (!j->stats[i].is_float && strcmp(j->stats[i].key, keys[k]) == 0)
                    cut = (long long)j->stats[i].i;
            if (cut)
                fprintf(out, "%-12s %s (cut: %lld bytes past spool.max_bytes discarded)\n",
                        names[k], paths[k], cut);
            else
                fprintf(out, "%-12s %s\n", names[k], paths[k]);
        }
    }
    for (size_t i = 0; i < j->n_stats; i++) {
        if (j->stats[i].is_float)
            fprintf(out, "stat %s: %g\n", j->stats[i].key, j->stats[i].f);
        else
            fprintf(out, "stat %s: %lld\n", j->stats[i].key, (long long)j->stats[i].i);
    }
}
