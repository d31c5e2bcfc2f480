/* diarknobs.h — the community-1 recipe's knobs on `diarize` and `cluster`,
 * under pyannote's names: each one from the command line, else from the
 * configuration's diarize: section (docs/config.md), else the recipe's.
 *
 *   --clustering-threshold X   clustering.threshold (AHC cut, 0.6)
 *   --Fa X, --Fb X             clustering.Fa, clustering.Fb (VBx, 0.07, 0.8)
 *   --min-duration-off S       segmentation.min_duration_off (seconds, 0)
 *   --embedding-exclude-overlap, --no-embedding-exclude-overlap
 *                              embedding_exclude_overlap (true; diarize only)
 *   --segmentation-step F      segmentation_step (windows F of the 10 s window
 *                              apart, [0.01, 1] in whole 10 ms: 0.1, 1 s)
 */
#ifndef GF_DIARKNOBS_H
#define GF_DIARKNOBS_H

#include "common/config.h"
#include "diar/cluster/cluster.h"

#include <getopt.h>
#include <stdbool.h>

enum {
    GF_KNOB_THRESHOLD = 3000, GF_KNOB_FA, GF_KNOB_FB, GF_KNOB_MIN_OFF, GF_KNOB_EXCLUDE,
    GF_KNOB_NO_EXCLUDE, GF_KNOB_STEP,
};

/* The getopt_long entries (diarize: all; cluster: the first five). */
#define GF_KNOB_CLUSTER_OPTIONS                                                \
    { "clustering-threshold", required_argument, NULL, GF_KNOB_THRESHOLD },    \
    { "Fa", required_argument, NULL, GF_KNOB_FA },                             \
    { "Fb", required_argument, NULL, GF_KNOB_FB },                             \
    { "min-duration-off", required_argument, NULL, GF_KNOB_MIN_OFF },          \
    { "segmentation-step", required_argument, NULL, GF_KNOB_STEP }
#define GF_KNOB_DIARIZE_OPTIONS                                                \
    GF_KNOB_CLUSTER_OPTIONS,                                                   \
    { "embedding-exclude-overlap", no_argument, NULL, GF_KNOB_EXCLUDE },       \
    { "no-embedding-exclude-overlap", no_argument, NULL, GF_KNOB_NO_EXCLUDE }

/* What the command line said; NaN (or -1) where it said nothing. */
typedef struct {
    double threshold, fa, fb, min_duration_off;
    double step;           /* segmentation_step, a fraction of the window */
    int exclude_overlap;   /* -1: not given */
} gf_knobs;

/* Nothing given yet. */
gf_knobs gf_knobs_none(void);

/* Take option c (its value arg) of command cmd when it is a knob. Returns
 * 1 when taken, 0 when c is no knob, -1 after saying why arg is refused. */
int gf_knobs_take(gf_knobs *k, const char *cmd, int c, const char *arg);

/* The values to run with, into co (threshold, vbx.Fa/Fb, min_duration_off,
 * and chunks.step: segmentation_step in seconds) and *exclude_overlap (may
 * be NULL): the command line's, else cfg's (may be NULL: the recipe's). */
void gf_knobs_apply(const gf_knobs *k, const gf_config *cfg, gf_cluster_opts *co,
                    bool *exclude_overlap);

/* co->chunks.step as segmentation_step, the fraction of the 10 s window. */
double gf_knobs_step_fraction(const gf_cluster_opts *co);

#endif
