/* jobfmt.h — how the CLI shows jobs and workers: JSON (json-c) for
 * --json, and the human forms of queue, show and workers. */
#ifndef GF_JOBFMT_H
#define GF_JOBFMT_H

#include "net/proto.h"

#include <stdio.h>

struct json_object;

/* A job as a new json-c object (the caller puts it). */
struct json_object *gf_job_json(const gf_job *j);

/* A worker as a new json-c object. */
struct json_object *gf_worker_json(const gf_worker_info *w);

/* "1h02m", "3m05s", "12s", "0.4s". */
void gf_fmt_duration(int64_t ms, char *buf, size_t len);

/* "0", "0,1", "-" */
void gf_fmt_cards(const gf_job *j, char *buf, size_t len);

/* The device request: "any", "gpu 1", "2 gpus", plus mode. */
void gf_fmt_request(const gf_job_spec *sp, char *buf, size_t len);

/* A diarize job's progress in percent (windows done / total), -1: none yet. */
int gf_job_progress_percent(const gf_job *j);

/* `gpuflock show`: one "key: value" line each. */
void gf_job_print(FILE *out, const gf_job *j);

#endif
