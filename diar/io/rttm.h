/* rttm.h — speaker turns as RTTM (NIST Rich Transcription Time Marked) and
 * as JSON.
 *
 * An RTTM SPEAKER line has ten space-separated fields:
 *   SPEAKER <uri> <channel> <start> <duration> <NA> <NA> <speaker> <NA> <NA>
 * The reader keeps SPEAKER lines and ignores other record types, blank
 * lines and '#' comments; a malformed SPEAKER line is an error naming the
 * file, the line and the problem. The file must be UTF-8 text without
 * control characters (tabs and a CR before the newline aside): a NUL byte,
 * invalid UTF-8 or an escape character is an error at its line, so that no
 * field of a binary file reaches a terminal. A file with any non-blank line
 * must hold at least one SPEAKER record (anything else is not an RTTM of
 * speaker turns); an empty or blank file is the RTTM of no speech, as the
 * writer produces it. Times are refused outside 0 to GF_RTTM_MAX_TIME.
 * The writer prints times with 6 decimals (microseconds), through a
 * temporary file renamed into place.
 *
 * gf_rttm is plain data: iterate r->turns[0 .. r->n - 1] directly. */
#ifndef GF_RTTM_H
#define GF_RTTM_H

#include <stdbool.h>
#include <stddef.h>

/* The largest start or duration accepted, in seconds (about 115 days): far
 * beyond any recording, and small enough that start + duration (at most
 * 2e7 s) keeps a resolution of 4e-9 s in a double, so no turn's end is lost
 * to rounding. */
#define GF_RTTM_MAX_TIME 1e7
/* Files larger than this are refused (256 MiB: some four million turns). */
#define GF_RTTM_MAX_BYTES (256 << 20)

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
 * (cannot read) / GF_EINVAL ("FILE:LINE: problem" or "FILE holds no SPEAKER
 * records" logged). */
int gf_rttm_read(const char *path, gf_rttm **out);
/* Parse RTTM text; 'name' is used in messages. Same returns. */
int gf_rttm_parse(const char *name, const char *text, size_t len, gf_rttm **out);

/* Field 'what' of name:line as a time in seconds: a number from 0 to
 * GF_RTTM_MAX_TIME (-0 reads as 0). Returns 0 with *out set, or GF_EINVAL
 * after logging "NAME:LINE: WHAT 'S' ..." with S quoted printable. Shared
 * with the UEM reader of `gpuflock der`. */
int gf_rttm_parse_time(const char *name, size_t line, const char *what, const char *s,
                       double *out);

/* Whether line `line` of name (len bytes, no newline) is text: valid UTF-8
 * with no control character but tab. Returns 0, or GF_EINVAL after logging
 * "NAME:LINE: not text: byte \xNN at column C ...". */
int gf_rttm_check_text(const char *name, size_t line, const char *s, size_t len);

/* RTTM text of all turns (caller frees). */
char *gf_rttm_format(const gf_rttm *r);
/* JSON: {"turns": [{"uri", "channel", "start", "end", "duration",
 * "speaker", "overlap"}, ...], "speakers": [sorted labels]}; "overlap":
 * another speaker's turn shares part of this one's time (caller frees). */
char *gf_rttm_json(const gf_rttm *r);

/* Write text to path through path.tmp.PID and rename; "-" writes stdout.
 * With replace false an existing path is never replaced (GF_EEXIST,
 * logged: common/util.h gf_write_file). Returns 0 or the GF_E* (logged). */
int gf_rttm_write_text(const char *path, const char *text, bool replace);

/* An output beside an RTTM: "NAME" + suffix for "NAME.rttm" (any other
 * name: the name + suffix): gf_rttm_beside(p, ".json"). Caller frees. */
char *gf_rttm_beside(const char *rttm, const char *suffix);

#endif
