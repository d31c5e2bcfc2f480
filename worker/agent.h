/* agent.h — a worker's life with the broker: register, heartbeat, run the
 * jobs it is given, report their results, survive the broker.
 *
 * The Paranoid Pirate pattern: READY with the card's identity, heartbeats
 * both ways, and when the broker falls silent for `liveness` intervals (or
 * a restarted broker does not know us) a fresh socket and a new READY that
 * lists the jobs still running here, so the broker reclaims them instead of
 * running them again. Results are sent again after such a reconnect until a
 * later heartbeat shows the broker outlived them. */
#ifndef GF_AGENT_H
#define GF_AGENT_H

#include "common/card.h"
#include "common/config.h"

#include <signal.h>

typedef struct gf_agent gf_agent;

/* An agent for configured device `device` with its identity. signal_fd:
 * the read end of a non-blocking pipe that receives one byte, the signal
 * number, per SIGCHLD, SIGTERM or SIGINT (borrowed; worker/main.c owns
 * it). */
gf_agent *gf_agent_new(const gf_config *cfg, int device, const gf_card_identity *card,
                       int signal_fd);

/* Serve until SIGTERM/SIGINT (read from the signal pipe): then stop the
 * jobs (SIGTERM, kill_grace_s, SIGKILL), report them, and return 0. */
int gf_agent_run(gf_agent *self);

void gf_agent_destroy(gf_agent **self_p);

#endif
