/* router.h — a ROUTER endpoint: the broker's side of every connection.
 *
 * libzmq's ROUTER socket on any endpoint libzmq serves (ipc://, tcp:// with
 * CURVE), made by gf_wire_socket with the house's options, and the message
 * layer of net/wire.h on it. What the broker relies on: a routing id per
 * connection (five bytes, never reused), a send to a peer that is gone
 * fails (ROUTER_MANDATORY), a frame over the size limit drops that
 * connection (ZMQ_MAXMSGSIZE), a peer that does not finish its handshake in
 * 30 s is dropped (ZMQ_HANDSHAKE_IVL), PINGs are answered, and on ipc://
 * the kernel's credentials of each connection's process (SO_PEERCRED,
 * libzmq's Peer-Address). libzmq reads a peer's messages only once its
 * handshake is over: a request sent before the ROUTER's READY waits. */
#ifndef GF_ROUTER_H
#define GF_ROUTER_H

#include "common/config.h"
#include "net/proto.h"
#include "net/wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <zmq.h>

typedef struct gf_router gf_router;

/* A ROUTER of the libzmq context zctx bound to endpoint (cfg: its CURVE
 * keys, see gf_wire_socket). An ipc:// socket file is made by the bind, in
 * this thread (with the caller's umask; libzmq first unlinks a file of that
 * name: the caller makes sure no other broker serves it). Returns NULL with
 * the reason in err. */
gf_router *gf_router_bind(void *zctx, const char *endpoint, const gf_config *cfg, char *err,
                          size_t errlen);

/* Close the socket and remove an ipc:// socket file (libzmq leaves it), so
 * that no client connects to a broker that is gone. NULL-safe, twice. */
void gf_router_destroy(gf_router **self_p);

/* What zmq_poll should watch for this router's input. */
void gf_router_pollitem(gf_router *self, zmq_pollitem_t *item);

/* Take one message without waiting: 0 with *out decoded and *peer filled
 * (its credentials on ipc:// only); GF_EPROTO / GF_ETOOBIG for a body that
 * does not decode (err says why; *peer is filled so the sender can be
 * answered); GF_ETIMEDOUT when there is nothing; GF_EINTR / GF_EIO from
 * libzmq. */
int gf_router_recv(gf_router *self, gf_peer *peer, gf_msg *out, char *err, size_t errlen);

/* Send m to peer with the envelope it came with (its empty delimiter),
 * without waiting. Returns 0, GF_ENOENT when the peer is gone, GF_EINVAL /
 * GF_ETOOBIG when m does not encode, GF_ETIMEDOUT when the peer's queue is
 * full (libzmq's ZMQ_SNDHWM, 1000 messages), GF_EIO else. */
int gf_router_send(gf_router *self, const gf_peer *peer, const gf_msg *m);

#endif
