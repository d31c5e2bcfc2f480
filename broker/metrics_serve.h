/* metrics_serve.h — where gpuflockd's metrics text goes: an HTTP endpoint
 * (libmicrohttpd, on a thread of its own) and/or a .prom file for
 * node_exporter's textfile collector (a thread of its own, a new file
 * renamed into place every textfile_interval_s seconds).
 *
 * The loop publishes a whole text (gf_metrics_pub_set); a scrape or a
 * write takes a copy of the last one under a mutex held for a pointer swap
 * or a copy, never for anything that waits: no scrape, slow client or slow
 * disk ever holds up the loop. */
#ifndef GF_METRICS_SERVE_H
#define GF_METRICS_SERVE_H

#include "common/config.h"

#include <stddef.h>

typedef struct gf_metrics_pub gf_metrics_pub;

/* Serve what cfg says: metrics.listen (refused unless loopback or
 * allow_remote, as the configuration checked), metrics.textfile. text:
 * the first snapshot (taken; *text is set to NULL). Returns NULL with
 * *rc 0 when neither is configured, NULL with *rc < 0 after logging (the
 * address cannot be bound, the textfile's folder cannot be opened). */
gf_metrics_pub *gf_metrics_pub_start(const gf_config *cfg, char **text, size_t len, int *rc);

/* The new snapshot (taken; *text is set to NULL). */
void gf_metrics_pub_set(gf_metrics_pub *self, char **text, size_t len);

/* The port the endpoint listens on (metrics.listen with port 0: the one
 * the kernel picked), 0 without one. */
int gf_metrics_pub_port(const gf_metrics_pub *self);

/* Stop the threads, remove the textfile, free. */
void gf_metrics_pub_stop(gf_metrics_pub **self_p);

#endif
