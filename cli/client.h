/* client.h — the CLI's connection to gpuflockd, and what several
 * subcommands share: the job options of submit and run, exit statuses of
 * ended jobs, and printing.
 *
 * "Is a broker running?" is answered by its pid file (<run_dir>/gpuflockd.pid
 * is flock-ed by a live broker), before any socket is touched, so a missing
 * broker is reported at once, plainly, with how to start one. */
#ifndef GF_CLIENT_H
#define GF_CLIENT_H

#include "cli/cli.h"
#include "common/config.h"
#include "net/proto.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct gf_client gf_client;

/* Load the configuration (config_path as gf_config_load takes it; the
 * one in ctx, which this then takes, when it was loaded from the same
 * path) and connect. On failure says why through the log (no broker: how
 * to start one) and returns NULL with the exit status in *status (78
 * config, 69 no broker). */
gf_client *gf_client_open(const char *config_path, gf_cli_ctx *ctx, int *status);
void gf_client_destroy(gf_client **self_p);

/* The client backend of this program (gf_client_transports, net/transport.h)
 * that reaches cfg->client_endpoint, NULL when none does. */
const struct gf_transport *gf_client_reaches(const gf_config *cfg);

/* Send req, receive the reply into *rep (an "error" reply is returned as
 * the message, op GF_OP_ERROR). timeout_ms < 0 waits as long as the broker
 * lives. Returns 0, or GF_EIO when the broker went away / did not answer
 * (said through the log). */
int gf_client_call(gf_client *self, const gf_msg *req, gf_msg *rep, int timeout_ms);

/* Print an error reply as "gpuflock CMD: message" (the request names the
 * broker's message starts with left out: CMD names it already) and return
 * the exit status that fits its code. */
int gf_client_report(const char *cmd, const gf_msg *rep);

/* One request, one reply: open (config_path, ctx), call, close. Returns 0 with
 * the reply in *rep (the caller clears it), or the exit status when there
 * was no reply (78 config, 69 no broker or no answer). */
int gf_client_once(const char *config_path, gf_cli_ctx *ctx, const gf_msg *req, gf_msg *rep,
                   int timeout_ms);

/* Options of submit and run. Parses argv from optind on (getopt_long with
 * "+"), leaves the command in spec->argv. Returns 0, or an exit status
 * (64 after a message) . */
typedef struct {
    const char *config;       /* --config */
    gf_job_spec spec;         /* the job as asked */
    unsigned array;           /* --array N */
    const char *file;         /* --file LIST */
    bool help;                /* --help was given */
} gf_jobopts;

int gf_jobopts_parse(int argc, char **argv, gf_jobopts *o, bool allow_batch);
void gf_jobopts_clear(gf_jobopts *o);
void gf_jobopts_usage(FILE *out, const char *cmd);

/* Exit status for an ended job: 0 done; its exit status or 128+signal if
 * it failed; 1 for other failures and cancellations. */
int gf_job_exit_status(const gf_job *j);

/* Parse "12,13,14" or separate arguments into ids. Returns 0 or 64. */
int gf_parse_ids(const char *cmd, int argc, char **argv, uint64_t **ids, size_t *n);

/* A request naming jobs by id (cancel, hold, release, requeue; req owned by
 * the caller): sent, and for each id refused a line saying why (no such
 * job, not your job, else words(op, code)). Returns 0, 1 (a job unknown or
 * in the wrong state), 77 (not yours) or the exit status of a failed call. */
int gf_client_ids_verb(const char *config, gf_cli_ctx *ctx, gf_msg *req, const char *name,
                       const char *(*words)(gf_op op, int code));

/* --yieldable[=SIG@GRACE] (arg NULL: the defaults, SIGUSR1 and 30 s): a
 * signal by name (USR1, SIGUSR2...) or number, a grace in seconds; either
 * may be left out ("@60", "USR2"). 0, or GF_EXIT_USAGE after saying why. */
int gf_parse_yieldable(const char *cmd, const char *arg, int32_t *sig, int32_t *grace_s);

#endif
