/* der.h — diarization error rate, as pyannote.metrics defines it.
 *
 * Input is plain speaker turns (file, speaker, start, end) from whatever
 * reader produced them; this module knows no file format. Per file:
 * the scored region is the UEM (default: the extent of reference and
 * hypothesis together, from the earliest start to the latest end), minus
 * collars of `collar` seconds in total centred on every reference turn
 * boundary (±collar/2), minus, with skip_overlap, every region where two
 * or more reference turns overlap. Hypothesis speakers are mapped one-to-one
 * onto reference speakers so as to maximise their co-occurring time
 * (linear sum assignment, diar/cluster/lsa); then on each stretch where the active turns do not
 * change, with R reference and H hypothesis turns active and C of them
 * matched, it adds R to the total, max(0, R-H) to missed speech, max(0, H-R)
 * to false alarm and min(R, H) - C to confusion, each times the duration.
 * Overlapping speech therefore counts once per speaker. DER = (missed +
 * false alarm + confusion) / total; with a total of 0 it is 0 when there is
 * no error and 1 otherwise (pyannote's convention). docs/der.md has it all. */
#ifndef GF_DIAR_DER_H
#define GF_DIAR_DER_H

#include <stdbool.h>
#include <stddef.h>

/* One speaker turn. Strings are borrowed for the duration of the call. */
typedef struct {
    const char *uri;      /* the file (RTTM's second field) */
    const char *speaker;  /* speaker label */
    double start;         /* seconds */
    double end;           /* seconds; turns with end <= start are ignored */
} gf_der_turn;

/* One scored span of a file (a UEM line). */
typedef struct {
    const char *uri;      /* the file */
    double start;         /* seconds */
    double end;           /* seconds */
} gf_der_span;

typedef struct {
    double collar;        /* seconds in total around each reference boundary */
    bool skip_overlap;    /* leave reference overlap out of the score */
} gf_der_options;

/* Durations in seconds. total counts each reference speaker separately. */
typedef struct {
    double total;         /* reference speech, summed over speakers */
    double correct;       /* of it, attributed to the mapped speaker */
    double missed;        /* missed speech */
    double false_alarm;   /* false alarm */
    double confusion;     /* speaker confusion */
} gf_der_components;

/* Score of one file: its components and the speaker mapping used. */
typedef struct {
    char *uri;                /* owned */
    gf_der_components c;      /* the components */
    size_t n_map;             /* pairs in the mapping */
    char **map_hyp;           /* hypothesis speaker i ... (owned) */
    char **map_ref;           /* ... maps to reference speaker i (owned) */
} gf_der_file;

/* Scores of every file and their sum. */
typedef struct {
    size_t n_files;           /* files scored, in order of first appearance
                                 (reference first, then hypothesis) */
    gf_der_file *files;       /* owned */
    gf_der_components total;  /* sums over the files */
} gf_der_report;

/* DER of some components (0 or 1 when total is 0, see above). */
double gf_der_rate(const gf_der_components *c);

/* Score every file that appears in the reference or the hypothesis. With
 * uem (n_uem > 0 or uem_given), only the spans listed are scored, and a file
 * with none is an error (GF_EINVAL, logged, naming it); otherwise each file
 * gets the default extent. Returns 0 with *out a new report, or GF_EINVAL
 * for a negative collar or non-finite times. */
int gf_der_score(const gf_der_turn *ref, size_t n_ref, const gf_der_turn *hyp, size_t n_hyp,
                 const gf_der_span *uem, size_t n_uem, bool uem_given,
                 const gf_der_options *opt, gf_der_report **out);

void gf_der_report_destroy(gf_der_report **self_p);

#endif
