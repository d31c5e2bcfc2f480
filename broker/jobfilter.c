/* jobfilter.c — a client's selection of jobs (see jobfilter.h). */
#include "broker/jobfilter.h"

#include "common/error.h"

#include <stdio.h>
#include <string.h>

#define ALL_STATES ((1u << GF_STATE_PENDING) | (1u << GF_STATE_RUNNING) | \
                    (1u << GF_STATE_DONE) | (1u << GF_STATE_FAILED) | (1u << GF_STATE_CANCELLED))
#define ENDED_STATES ((1u << GF_STATE_DONE) | (1u << GF_STATE_FAILED) | (1u << GF_STATE_CANCELLED))

int gf_jobfilter_init(gf_jobfilter *out, const gf_job_filter *wire, char *why, size_t len)
{
    out->wire = wire;
    out->states = ALL_STATES;
    if (!wire)
        return 0;
    if (wire->n_users > GF_JOBFILTER_MAX_USERS) {
        snprintf(why, len, "%zu users in one selection: at most %d", wire->n_users,
                 GF_JOBFILTER_MAX_USERS);
        return GF_EINVAL;
    }
    if (wire->n_states) {
        out->states = 0;
        for (size_t i = 0; i < wire->n_states; i++) {
            gf_job_state s;
            if (gf_job_state_parse(wire->states[i], &s) != 0) {
                /* the name is the client's: quoted with its length bounded
                 * (the reply escapes what is not UTF-8) */
                snprintf(why, len, "unknown state '%.64s' (pending, running, done, failed, "
                         "cancelled)", wire->states[i]);
                return GF_EINVAL;
            }
            out->states |= 1u << s;
        }
    }
    return 0;
}

bool gf_jobfilter_state(const gf_jobfilter *f, gf_job_state s)
{
    return (int)s >= 0 && (int)s < 32 && (f->states & (1u << s)) != 0;
}

bool gf_jobfilter_wants_ended(const gf_jobfilter *f)
{
    return (f->states & ENDED_STATES) != 0;
}

static bool ended(gf_job_state s)
{
    return (ENDED_STATES & (1u << s)) != 0;
}

bool gf_jobfilter_match(const gf_jobfilter *f, const gf_job *j)
{
    if (!gf_jobfilter_state(f, j->state))
        return false;
    const gf_job_filter *w = f->wire;
    if (!w)
        return true;
    if (w->n_users) {
        bool any = false;
        for (size_t i = 0; i < w->n_users && !any; i++)
            any = w->users[i] == j->uid;
        if (!any)
            return false;
    }
    if (w->name && (!j->spec.name || strcmp(w->name, j->spec.name) != 0))
        return false;
    if (w->since_ms && ended(j->state) && j->ended_ms < w->since_ms)
        return false;
    if (w->n_cards) {
        /* a pending job holds no card (one requeued still lists its last
         * run's, which `queue` does not show either) */
        bool any = false;
        for (size_t i = 0; i < w->n_cards && !any && j->state != GF_STATE_PENDING; i++)
            for (size_t c = 0; c < j->n_cards && !any; c++)
                any = w->cards[i] == j->cards[c];
        if (!any)
            return false;
    }
    return true;
}
