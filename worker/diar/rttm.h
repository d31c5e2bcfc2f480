/* rttm.h — speaker turns as RTTM (NIST Rich Transcription Time Marked) and
 * as JSON.
 *
 * An RTTM SPEAKER line has ten space-separated fields:
 *   SPEAKER <uri> <channel> <start> <duration> <NA> <NA> <speaker> <NA> <NA>
 * The reader keeps SPEAKER lines and ignores other record types, blank
 * lines and '#' comments; a malformed SPEAKER line is an error naming the
 * file, the line and the problem. The writer prints times with 6 decimals
 * (microseconds), through a temporary file renamed into place.
 *
 * gf_rttm is plain data: iterate r->turns[0 .. r->n - 1] directly. */
#ifndef GF_RTTM_H
#define GF_RTTM_H

#include <stddef.h>

typedef struct {
    char *uri;        /* recording (file) id */
    int channel;      /* usually 1 */
    double start;     /* seconds */
    double duration;  /* seconds, >= 0 */
    char *speaker;    /* speaker label */
} gf_turn;

typedef struct {
    gf_turn *turns;   /* n turns, owned */
    size_t n;         /* number of turns */
    size_t cap;       /* allocated */
} gf_rttm;

gf_rttm *gf_rttm_new(void);
void gf_rttm_destroy(gf_rttm **self_p);

/* Append a turn (strings copied). */
void gf_rttm_add(gf_rttm *r, const char *uri, int channel, double start, double duration,
                 const char *speaker);

/* Sort by uri, start, end, then speaker. */
void gf_rttm_sort(gf_rttm *r);

/* Read an RTTM file. Returns 0 and a new list in *out, or GF_ENOENT / GF_EIO
 * (cannot read) / GF_EINVAL ("FILE:LINE: problem" logged). */
int gf_rttm_read(const char *path, gf_rttm **out);
/* Parse RTTM text; 'name' is used in messages. Same returns. */
int gf_rttm_parse(const char *name, const char *text, size_t len, gf_rttm **out);

/* RTTM text of all turns (caller frees). */
char *gf_rttm_format(const gf_rttm *r);
/* JSON: {"turns": [{"uri", "channel", "start", "end", "duration",
 * "speaker"}, ...], "speakers": [sorted labels]} (caller frees). */
char *gf_rttm_json(const gf_rttm *r);

/* Write text to path through path.tmp.PID and rename; "-" writes stdout.
 * Returns 0 or GF_EIO (logged). */
int gf_rttm_write_text(const char *path, const char *text);

#endif
