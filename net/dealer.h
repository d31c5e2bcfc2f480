/* dealer.h — a DEALER connection to the broker: a worker's, or the full
 * CLI's (gpuflock-cli).
 *
 * libzmq's DEALER on any endpoint (ipc://, tcp:// with CURVE), made by
 * gf_wire_socket with the house's options, and the message layer of
 * net/wire.h on it. libzmq connects in the background, reconnects by
 * itself after the broker went away, and queues what is sent meanwhile (up
 * to ZMQ_SNDHWM, 1000 messages); a broker that restarted sees the same
 * socket as a new peer. gf_dealer_reconnect starts over with a new socket
 * (a new routing id, the queue dropped). The static front, which cannot
 * link libzmq, has its own client for ipc:// instead (net/zmtp.h). */
#ifndef GF_DEALER_H
#define GF_DEALER_H

#include "common/config.h"
#include "net/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <zmq.h>

typedef struct gf_dealer gf_dealer;

/* A DEALER of the libzmq context zctx connecting to endpoint (cfg: the
 * broker's CURVE key, see gf_wire_socket). delim: every message goes
 * REQ-style, after an empty frame (the CLI's requests); else the body alone
 * (a worker). Returns NULL with the reason in err. */
gf_dealer *gf_dealer_connect(void *zctx, const char *endpoint, const gf_config *cfg, bool delim,
                             char *err, size_t errlen);
void gf_dealer_destroy(gf_dealer **self_p);

/* Close the socket and connect a new one: 0, or GF_EIO / GF_ECONFIG with err
 * filled (the old socket is gone either way; try again later). */
int gf_dealer_reconnect(gf_dealer *self, char *err, size_t errlen);

/* What zmq_poll should watch for the broker's messages. */
void gf_dealer_pollitem(gf_dealer *self, zmq_pollitem_t *item);

/* Send m without waiting: 0, GF_ETIMEDOUT when libzmq's queue is full (no
 * broker for a long while), GF_EINVAL / GF_ETOOBIG when m does not encode,
 * GF_EIO else. */
int gf_dealer_send(gf_dealer *self, const gf_msg *m);

/* One message (an empty frame before it skipped) into *out, waiting up to
 * timeout_ms (0: only what is there; < 0: no limit). Returns 0; GF_ETIMEDOUT
 * when none came; GF_EINTR on a signal; GF_EPROTO / GF_ETOOBIG for one that
 * does not decode (err says why); GF_EIO when libzmq failed. */
int gf_dealer_recv(gf_dealer *self, int timeout_ms, gf_msg *out, char *err, size_t errlen);

#endif
