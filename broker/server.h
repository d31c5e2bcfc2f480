/* server.h — gpuflockd's event loop: the client and worker ROUTER sockets,
 * the job store, the scheduler and the local workers, wired together.
 *
 * One thread. Each turn of the loop reads what arrived on both sockets,
 * runs the timers (heartbeats, time limits, kill escalation, worker
 * restarts, the reclaim grace after a restart), asks the scheduler for
 * jobs to start, commits everything the turn changed to the store in one
 * transaction, and only then sends the replies and assignments of the turn:
 * a submit is acknowledged only once it is durable. */
#ifndef GF_SERVER_H
#define GF_SERVER_H

#include "common/config.h"

#include <signal.h>

typedef struct gf_server gf_server;

/* Open the store under state_dir, bind both endpoints (the client socket
 * file gets the configured owner, group and mode, the worker socket 0600),
 * load the jobs of an earlier run. run_dir, state_dir and spool_dir are
 * made 0711 (or tightened to it), the store 0600 (common/fsmode.h); one
 * that cannot be written is refused here, before any worker starts. Does
 * not take the pid file (main does). Returns NULL after logging. */
gf_server *gf_server_new(const gf_config *cfg);

/* Run until *stop is set (SIGTERM/SIGINT): then take no new jobs, let
 * running ones finish up to shutdown_deadline_s, stop the local workers
 * and return 0. A commit that fails (a full disk) does not stop it: it
 * keeps the changes in memory, refuses submits and cancels, and records
 * them once the store commits again. Returns GF_EIO if the store's WAL
 * cannot be synced (nothing more is acknowledged then). */
int gf_server_run(gf_server *self, volatile sig_atomic_t *stop);

/* Where main's SIGHUP handler raises its flag: the loop then reopens the
 * log file (common/log.h) and passes the signal on to the workers it
 * started, which reopen theirs. */
void gf_server_on_hangup(gf_server *self, volatile sig_atomic_t *flag);

void gf_server_destroy(gf_server **self_p);

#endif
