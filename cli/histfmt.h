/* histfmt.h — how `gpuflock history` shows a job's accounting, as sacct
 * does: times, elapsed and CPU time, peak memory, exit status and signal;
 * and job names and other user-chosen text made safe for a terminal. */
#ifndef GF_HISTFMT_H
#define GF_HISTFMT_H

#include "net/proto.h"

#include <stddef.h>
#include <stdint.h>

/* "2026-12-02T03:04:05" in local time; "-" for 0 (not yet). */
void gf_hist_time(int64_t ms, char *buf, size_t len);

/* ISO 8601 with the zone's offset, "2026-12-02T03:04:05+01:00"; "" for 0. */
void gf_hist_iso(int64_t ms, char *buf, size_t len);

/* sacct's form, "[D-]HH:MM:SS": "00:00:03", "1-02:03:04"; "-" below 0. */
void gf_hist_elapsed(int64_t ms, char *buf, size_t len);

/* Peak memory: "812K", "1.5M", "2.0G" (powers of 1024); "-" for 0. */
void gf_hist_rss(int64_t kb, char *buf, size_t len);

/* sacct's ExitCode, "STATUS:SIGNAL": "0:0", "3:0", "0:9"; "-" when the
 * command never ended by itself or a signal (cancelled while pending). */
void gf_hist_exit(const gf_job *j, char *buf, size_t len);

/* s for a terminal: each control byte (below 0x20, 0x7F) as '?', so a
 * job's name cannot move the cursor or set colours; cut to len - 1 bytes. */
void gf_hist_text(const char *s, char *buf, size_t len);

/* The elapsed time of a job: ended - started, now - started while it runs,
 * -1 when it never started. */
int64_t gf_hist_elapsed_ms(const gf_job *j, int64_t now_ms);

#endif
