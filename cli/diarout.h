/* diarout.h — which recordings `gpuflock diarize` takes and where each
 * one's outputs go: the rule, written once for --local and the broker path.
 *
 * Inputs. A FILE argument (or a line of --files-from) is one recording; a
 * DIR stands for the audio files in it, with -r those of its subfolders
 * too (never through a link to a folder, no hidden names); without -r the
 * subfolders left out are counted and said. The same file given twice (by
 * any path) is diarized once, and said. A missing or unreadable input is
 * named and left out; the others go on.
 *
 * Names. A recording's name is its file name without the extension; one
 * found under a DIR keeps its path below that DIR (DIR/2024/a.wav is
 * "2024/a"). Its outputs are NAME.rttm, with --json NAME.json, with
 * --exclusive NAME.exclusive.rttm, with --speaker-embeddings
 * NAME.speakers.npy, in --out
 * (subfolders made as needed) or beside the input; with
 * --save-intermediates D its arrays go into D itself when the call has one
 * recording, into D/NAME/ otherwise.
 *
 * Nothing is overwritten. Before any work starts: two recordings with an
 * output file in common are refused with both named (exit 64); an
 * output already there is refused (exit 73, every one named up to ten)
 * unless --overwrite (replace) or --skip-existing (a recording whose RTTM
 * is there is left out: a batch re-run picks up where it stopped; the RTTM
 * is written last, so it marks a finished recording). The writers keep the
 * rule when the check is long past: without --overwrite they never replace
 * a file that appeared meanwhile (common/util.h gf_write_file). */
#ifndef GF_DIAROUT_H
#define GF_DIAROUT_H

#include <stdbool.h>
#include <stddef.h>

/* What an output already on disk means. */
typedef enum {
    GF_DIAROUT_REFUSE = 0,  /* the call is refused (default) */
    GF_DIAROUT_OVERWRITE,   /* --overwrite: replaced */
    GF_DIAROUT_SKIP,        /* --skip-existing: a recording whose RTTM is there is left out */
} gf_diarout_existing;

typedef struct {
    const char *out_dir;          /* --out, or NULL: beside each input */
    const char *save_dir;         /* --save-intermediates, or NULL */
    bool json;                    /* --json: NAME.json as well */
    bool exclusive;               /* --exclusive: NAME.exclusive.rttm */
    bool speakers;                /* --speaker-embeddings: NAME.speakers.npy */
    bool recursive;               /* -r: a DIR's subfolders too */
    const char *files_from;       /* --files-from LIST ("-": stdin), or NULL */
    gf_diarout_existing existing; /* see above */
    const char *ckpt_dir;         /* --checkpoint-dir, or NULL: an output there that the
                                   * record of an interrupted run of the same command wrote
                                   * (gf_diarout_record) is its own, not in the way */
} gf_diarout_opts;

/* One recording to diarize and its outputs (paths as the user gave them,
 * joined with --out: relative ones stay relative to the cwd). */
typedef struct {
    char *input;   /* the recording */
    char *name;    /* its name: "sample", "2024/a" */
    char *rttm;    /* NAME.rttm */
    char *json;    /* NAME.json, NULL without --json */
    char *exclusive; /* NAME.exclusive.rttm, NULL without --exclusive */
    char *speakers;  /* NAME.speakers.npy, NULL without --speaker-embeddings */
    char *save;    /* its intermediates folder, NULL without --save-intermediates */
} gf_diarout;

typedef struct {
    gf_diarout *items;   /* to diarize, in order */
    size_t n;
    size_t n_skipped;    /* --skip-existing: left out, their RTTM there */
    size_t n_missing;    /* inputs named on stderr as missing or unreadable */
} gf_diarout_plan;

/* Gather the recordings of args (and --files-from), name their outputs,
 * check them, and make the folders they go into. Returns 0 with *plan
 * filled (n may be 0 when all were skipped or missing: n_missing says
 * whether that is exit 66), or the exit status after saying why on stderr:
 * 64 a collision, 66 --files-from unreadable, 73 outputs there or a folder
 * that cannot be made. Nothing is made on disk unless 0 is returned. */
int gf_diarout_make(const gf_diarout_opts *o, char *const *args, size_t n_args,
                    gf_diarout_plan *plan);

void gf_diarout_free(gf_diarout_plan *plan);

/* Where --checkpoint-dir keeps a recording's files: dir/<32 hex of the
 * SHA-256 of its RTTM's path made absolute (from the working folder)> + ext
 * (".ckpt": its checkpoint; ".out", whose ".outs" is the record of the
 * outputs a run of it wrote, common/djouts.h). The caller frees. */
char *gf_diarout_ckpt_file(const char *dir, const char *rttm, const char *ext);

#endif
