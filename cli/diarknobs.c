/* diarknobs.c — the recipe's knobs on the command line (see diarknobs.h). */
#include "cli/diarknobs.h"
#include "diar/pipeline.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

gf_knobs gf_knobs_none(void)
{
    return (gf_knobs){ .threshold = NAN, .fa = NAN, .fb = NAN, .min_duration_off = NAN,
                       .step = NAN, .exclude_overlap = -1 };
}

/* A finite number within (lo, hi] (lo itself with lo_in), into *out. */
static int number(const char *cmd, const char *opt, const char *arg, double lo, bool lo_in,
                  double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(arg, &end);
    if (!*arg || *end || errno || !isfinite(v)) {
        fprintf(stderr, "gpuflock %s: %s '%s': expected a number\n", cmd, opt, arg);
        return -1;
    }
    if (v > hi || v < lo || (!lo_in && v == lo)) {
        fprintf(stderr, "gpuflock %s: %s %s: must be %s %g and at most %g\n", cmd, opt, arg,
                lo_in ? "at least" : "above", lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int gf_knobs_take(gf_knobs *k, const char *cmd, int c, const char *arg)
{
    switch (c) {
    case GF_KNOB_THRESHOLD:
        return number(cmd, "--clustering-threshold", arg, 0.0, false, 2.0, &k->threshold) ? -1 : 1;
    case GF_KNOB_FA:
        return number(cmd, "--Fa", arg, 0.0, false, 1e3, &k->fa) ? -1 : 1;
    case GF_KNOB_FB:
        return number(cmd, "--Fb", arg, 0.0, false, 1e3, &k->fb) ? -1 : 1;
    case GF_KNOB_MIN_OFF:
        return number(cmd, "--min-duration-off", arg, 0.0, true, 3600.0, &k->min_duration_off)
                   ? -1 : 1;
    case GF_KNOB_EXCLUDE:
        k->exclude_overlap = 1;
        return 1;
    case GF_KNOB_NO_EXCLUDE:
        k->exclude_overlap = 0;
        return 1;
    case GF_KNOB_STEP: {
        size_t samples;
        if (number(cmd, "--segmentation-step", arg, GF_DIAR_STEP_MIN, true, 1.0, &k->step))
            return -1;
        if (gf_diar_step_samples(k->step, &samples)) {
            fprintf(stderr, "gpuflock %s: --segmentation-step %s: must be a whole number of "
                            "10 ms of the 10 s window (0.001 of it)\n", cmd, arg);
            return -1;
        }
        return 1;
    }
    default:
        return 0;
    }
}

void gf_knobs_apply(const gf_knobs *k, const gf_config *cfg, gf_cluster_opts *co,
                    bool *exclude_overlap)
{
    gf_cluster_opts def = gf_cluster_defaults();
    co->threshold = !isnan(k->threshold) ? k->threshold : cfg ? cfg->diar_threshold : def.threshold;
    co->vbx.Fa = !isnan(k->fa) ? k->fa : cfg ? cfg->diar_fa : def.vbx.Fa;
    co->vbx.Fb = !isnan(k->fb) ? k->fb : cfg ? cfg->diar_fb : def.vbx.Fb;
    co->min_duration_off = !isnan(k->min_duration_off) ? k->min_duration_off
                           : cfg                       ? cfg->diar_min_duration_off
                                                       : def.min_duration_off;
    double step = !isnan(k->step) ? k->step : cfg ? cfg->diar_segmentation_step
                                                  : GF_DIAR_STEP_DEFAULT;
    co->chunks.step = step * co->chunks.duration;
    if (exclude_overlap)
        *exclude_overlap = k->exclude_overlap >= 0 ? k->exclude_overlap == 1
                           : cfg                   ? cfg->diar_exclude_overlap
                                                   : true;
}

double gf_knobs_step_fraction(const gf_cluster_opts *co)
{
    return co->chunks.step / co->chunks.duration;
}
