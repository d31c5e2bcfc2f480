/* diarsubmit.h — `gpuflock diarize` through gpuflockd: one diarize job per
 * recording, followed until every one has ended.
 *
 * Each recording (its outputs already named and checked: cli/diarout.h)
 * becomes a job of kind diarize (shared lock mode, any card unless --gpu N)
 * whose paths are made absolute here (the worker has its own working
 * directory). Then one `wait` request with a short timeout per tick
 * brings back every job with its windows done / total: a progress bar per
 * file and one for all on a terminal, a plain line per change otherwise.
 * At the end, one summary line per recording (as --local prints) and, on
 * stderr, each failed file with the reason. */
#ifndef GF_DIARSUBMIT_H
#define GF_DIARSUBMIT_H

#include "cli/cli.h"
#include "cli/diarout.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char *config;     /* --config, or NULL */
    gf_cli_ctx *ctx;        /* main's, for the broker client (cli/cli.h) */
    const gf_diarout *items; /* the recordings and their outputs (cli/diarout.h), checked */
    size_t n_items;
    const char *models;     /* --models, or NULL: the worker's models_dir */
    bool json;              /* --json */
    bool exclusive;         /* --exclusive */
    bool speakers;          /* --speaker-embeddings */
    bool overwrite;         /* --overwrite: the worker may replace outputs */
    int gpu;                /* --gpu N, -1: any card */
    int num_speakers, min_speakers, max_speakers;  /* 0: free */
    double threshold, fa, fb, min_duration_off;    /* the recipe's knobs (cli/diarknobs.h) */
    double segmentation_step;                      /* ... its fraction of the window */
    bool exclude_overlap;
} gf_diarsubmit_opts;

/* Submit and follow. Returns the exit status: 0 when every recording got
 * its RTTM; 69 with no broker (said plainly, with --local as the other
 * way); else that of the first failure (66 missing input, 65 bad audio,
 * 73 output not writable, 1 cancelled). */
int gf_diarsubmit_run(const gf_diarsubmit_opts *o);

#endif
