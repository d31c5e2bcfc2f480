/* wire.h — gf_msg over ZeroMQ: one message body per frame, with the
 * envelope a ROUTER socket needs.
 *
 * A ROUTER side receives [routing id][optional empty delimiter][body]: the
 * delimiter is there when the peer is a REQ socket or a DEALER that mimics
 * one (the gpuflock CLI does), absent for workers. A reply goes back with
 * the same envelope. On an ipc:// connection the peer's uid, gid and pid
 * come from the kernel (SO_PEERCRED, which libzmq exposes as the
 * "Peer-Address" property ":uid:gid:pid" of each received frame), never
 * from the message. */
#ifndef GF_WIRE_H
#define GF_WIRE_H

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

/* Receive one message. router: the socket is a ROUTER (fills *peer); else a
 * DEALER (peer may be NULL; a leading empty frame is skipped). flags: 0 or
 * ZMQ_DONTWAIT. Returns 0 with *out decoded; GF_EPROTO / GF_ETOOBIG for a
 * body that does not decode (err says why; *peer is filled so the sender
 * can be answered); GF_ETIMEDOUT when nothing is there (EAGAIN: DONTWAIT
 * or the socket's receive timeout); GF_EINTR on a signal; GF_EIO else. */
int gf_wire_recv(void *sock, bool router, int flags, gf_peer *peer, gf_msg *out, char *err,
                 size_t errlen);

/* Send one message: to `peer` through a ROUTER (its envelope), or with
 * peer NULL through a DEALER (delim: put an empty frame first). Returns 0,
 * GF_ENOENT when a ROUTER_MANDATORY peer is gone, GF_EINVAL / GF_ETOOBIG
 * when the message does not encode, GF_EIO else. */
int gf_wire_send(void *sock, const gf_peer *peer, bool delim, const gf_msg *m);

/* Send an "error" reply (code, message) to peer (or through a DEALER). */
int gf_wire_send_error(void *sock, const gf_peer *peer, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
