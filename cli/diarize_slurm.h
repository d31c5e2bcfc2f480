/* diarize_slurm.h — `gpuflock diarize --slurm`: the recordings of one call
 * diarized by one Slurm job array.
 *
 * The submitter settles the recordings and their outputs with cli/diarout
 * (the one rule: names, collisions, nothing overwritten), writes a run
 * folder under --out (.gpuflock-slurm/run-TIME-PID: the file lists of each
 * task, the arguments of its local run, its log and exit status), submits
 * one array with sbatch, prints the Slurm job id and, unless --no-wait,
 * follows it: a line per finished recording (its RTTM appeared in --out), an
 * overall line whenever the count of running tasks or finished files moves,
 * and at the end each recording left without its RTTM, named with the
 * reason its task's log gives (or the task's fate when it has none).
 *
 * Each task (`gpuflock diarize --slurm-task RUN K`, started by the array's
 * script) runs `gpuflock diarize --local --any` over its share, one run per
 * output subfolder (one in all without -r), so the models load once per
 * task; on the card Slurm allocated (CUDA_VISIBLE_DEVICES), locked by the
 * gpuflock SPANK plugin where it is loaded. A task never replaces an output
 * unless the call said --overwrite: it skips those there, so a requeued task
 * goes on from what it had finished, and a re-run with --skip-existing
 * picks up what a cancelled or failed array left. */
#ifndef GF_DIARIZE_SLURM_H
#define GF_DIARIZE_SLURM_H

#include "cli/diarout.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char *out_dir;     /* --out DIR (required with --slurm) */
    const char *partition;   /* --partition P, or NULL: Slurm's default */
    const char *time;        /* --time T, or NULL: the partition's default */
    int tasks;               /* --tasks N; 0: one per file, at most 8 */
    int gpus_per_task;       /* --gpus-per-task G (0: none asked) */
    bool no_wait;            /* --no-wait */
    bool overwrite;          /* --overwrite: tasks may replace outputs */
    char *const *local_args; /* the options each task's --local run gets */
    size_t n_local_args;
} gf_diarize_slurm_opts;

/* Check --partition and --time as sbatch would take them; 0 or GF_EXIT_USAGE
 * (said). */
int gf_diarize_slurm_check(const gf_diarize_slurm_opts *o);

/* Submit the plan's recordings as one array and (unless no_wait) follow it.
 * Returns the exit status: 0 every recording has its RTTM (or --no-wait and
 * submitted), 65 some did not (each named), 69 sbatch missing or refusing,
 * 73 the run folder cannot be written. */
int gf_diarize_slurm_run(const gf_diarize_slurm_opts *o, const gf_diarout_plan *plan);

/* One task of the array: run folder 'run', task 'task' (its
 * SLURM_ARRAY_TASK_ID). Returns the first failing run's exit status, or 0. */
int gf_diarize_slurm_task(const char *run, const char *task);

#endif
