/* wire.h — gf_msg over ZeroMQ: one message body per frame, with the
 * envelope a ROUTER socket needs.
 *
 * A ROUTER side receives [routing id][optional empty delimiter][body]: the
 * delimiter is there when the peer is a REQ socket or a DEALER that mimics
 * one (the gpuflock CLI does), absent for workers. A reply goes back with
 * the same envelope. On an ipc:// connection the peer's uid, gid and pid
 * come from the kernel (SO_PEERCRED, which libzmq exposes as the
 * "Peer-Address" property "localhost:uid:gid:pid" of each received frame),
 * never from the message. */
#ifndef GF_WIRE_H
#define GF_WIRE_H

#include "common/config.h"
#include "net/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Who sent a message to a ROUTER socket, and how to answer. */
typedef struct {
    uint8_t id[256];      /* ROUTER routing id */
    size_t id_len;
    bool delim;           /* an empty delimiter frame came before the body */
    bool has_cred;        /* uid/gid/pid are known (ipc://) */
    uint32_t uid;
    uint32_t gid;
    int32_t pid;
} gf_peer;

/* What the receiving socket is. Credentials are read only where the kernel
 * gave them: a tcp:// peer's Peer-Address is its IP address, and an IPv6
 * one can look like ":uid:gid:pid" ("2001:db8:1:1:1:0:5:1" would read as
 * uid 0, gid 5, pid 1). */
typedef enum {
    GF_WIRE_DEALER,       /* a DEALER: a leading empty frame is skipped */
    GF_WIRE_ROUTER,       /* a ROUTER not on ipc://: no credentials */
    GF_WIRE_ROUTER_IPC,   /* a ROUTER on ipc://: the peer's credentials too */
} gf_wire_side;

/* Receive one message on a socket of that side (a ROUTER fills *peer; a
 * DEALER's peer may be NULL). flags: 0 or ZMQ_DONTWAIT. Returns 0 with *out
 * decoded; GF_EPROTO / GF_ETOOBIG for a body that does not decode (err says
 * why; *peer is filled so the sender can be answered); GF_ETIMEDOUT when
 * nothing is there (EAGAIN: DONTWAIT or the socket's receive timeout);
 * GF_EINTR on a signal; GF_EIO else. */
int gf_wire_recv(void *sock, gf_wire_side side, int flags, gf_peer *peer, gf_msg *out, char *err,
                 size_t errlen);

/* The kernel's credentials in the Peer-Address property of a frame from an
 * ipc:// peer: libzmq 4.3 appends ":uid:gid:pid" (SO_PEERCRED, read once
 * when it accepts the connection; src/stream_engine_base.cpp,
 * get_peer_address) to the name getnameinfo gives the unix socket
 * ("localhost"). Fills peer's has_cred, uid, gid and pid: true only for
 * exactly that shape, a host without ':' and three decimal numbers. */
bool gf_wire_peer_cred(const char *peer_address, gf_peer *peer);

/* Send one message without waiting: to `peer` through a ROUTER (its
 * envelope), or with peer NULL through a DEALER (delim: put an empty frame
 * first). Returns 0, GF_ENOENT when a ROUTER_MANDATORY peer is gone,
 * GF_ETIMEDOUT when the socket's queue for it is full (ZMQ_SNDHWM),
 * GF_EINVAL / GF_ETOOBIG when the message does not encode, GF_EIO else. */
int gf_wire_send(void *sock, const gf_peer *peer, bool delim, const gf_msg *m);

/* A libzmq socket of zctx on endpoint, the one place the project's sockets
 * are made: type ZMQ_ROUTER is bound, ZMQ_DEALER connected. Options: no
 * linger; a frame over GF_PROTO_MAX_FRAME + 1 KiB drops the connection
 * (ZMQ_MAXMSGSIZE); on a ROUTER a send to a peer that is gone fails
 * (ZMQ_ROUTER_MANDATORY). On tcp:// CURVE, set up here only: a ROUTER is
 * the server with cfg's curve_secret_key, a DEALER the client of cfg's
 * curve_public_key with a key pair of its own, made for this socket;
 * tcp:// without those keys is refused (the broker never serves tcp://
 * in the clear). Returns NULL with the endpoint and the reason in err. */
void *gf_wire_socket(void *zctx, int type, const char *endpoint, const gf_config *cfg, char *err,
                     size_t errlen);

/* Send an "error" reply (code, message) to peer (or through a DEALER). */
int gf_wire_send_error(void *sock, const gf_peer *peer, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
