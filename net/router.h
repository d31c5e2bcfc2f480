/* router.h — the broker's two ROUTER endpoints (clients, workers).
 *
 * On an ipc:// endpoint (the default) the broker serves ZMTP 3.1 itself, in
 * its own thread: a unix stream socket, one epoll set, each peer's greeting,
 * NULL-mechanism READY and frames read and written without libzmq. Through
 * libzmq every message crossed threads four times (the peer's bytes reach
 * libzmq's I/O thread, which wakes the broker through an eventfd; the reply
 * goes back the same way), about half of the broker's CPU per job
 * (bench/RESULTS.md). Peers are unchanged: libzmq DEALER and REQ sockets and
 * the CLI's own client (net/zmtp.c) connect as before. What the broker
 * relied on from libzmq's ROUTER holds: a routing id per connection, a send
 * to a peer that is gone fails (ROUTER_MANDATORY), the kernel's credentials
 * of the peer (SO_PEERCRED), and a frame over the size limit drops that
 * connection. Other endpoints (tcp://, which needs CURVE) stay with libzmq's
 * ROUTER. Two backends behind one table of operations. */
#ifndef GF_ROUTER_H
#define GF_ROUTER_H

#include "net/proto.h"
#include "net/wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <zmq.h>

typedef struct gf_router gf_router;

/* Serve ZMTP on a new unix socket at path (which must not exist), frames
 * of at most max_frame bytes. Returns NULL after logging why. */
gf_router *gf_router_listen(const char *path, size_t max_frame);

/* Serve through a bound libzmq ROUTER socket, taking ownership of it (it is
 * closed by gf_router_destroy). */
gf_router *gf_router_wrap_zmq(void *sock);

/* Close every connection and the socket (an ipc socket file is removed). */
void gf_router_destroy(gf_router **self_p);

/* How long an ipc:// peer may take from its connect to its READY before
 * it is dropped (default 30 s, as libzmq's ZMQ_HANDSHAKE_IVL; checked about
 * once a second, from gf_router_pollitem). No effect on libzmq's ROUTER. */
void gf_router_set_handshake_ms(gf_router *self, int ms);

/* What zmq_poll should watch for this router's input (ZMQ_POLLIN on a
 * libzmq socket or on a file descriptor). Returns true when input is
 * already buffered, so the caller must not wait. */
bool gf_router_pollitem(gf_router *self, zmq_pollitem_t *item);

/* Take one message without waiting: 0 with *out decoded and *peer filled;
 * GF_EPROTO / GF_ETOOBIG for a body that does not decode (err says why;
 * *peer is filled so the sender can be answered); GF_ETIMEDOUT when there
 * is nothing; GF_EINTR / GF_EIO from libzmq. */
int gf_router_recv(gf_router *self, gf_peer *peer, gf_msg *out, char *err, size_t errlen);

/* Send m to peer with the envelope it came with (its empty delimiter).
 * Returns 0, GF_ENOENT when the peer is gone, GF_EINVAL / GF_ETOOBIG when
 * m does not encode, GF_EIO else (a peer that stopped reading). */
int gf_router_send(gf_router *self, const gf_peer *peer, const gf_msg *m);

#endif
