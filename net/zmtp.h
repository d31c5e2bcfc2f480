/* zmtp.h — a ZeroMQ DEALER client on a unix socket, without libzmq.
 *
 * The `gpuflock` front is a static musl program (a glibc start alone costs
 * more than its whole request on a virtual machine, bench/RESULTS.md) and a
 * static program cannot link libzmq and the 17 libraries it pulls in. So the
 * front's job commands speak ZMTP 3.1 (rfc.zeromq.org/spec/23 and 37)
 * themselves for the one case they need: a DEALER with the NULL mechanism
 * on an ipc:// endpoint, blocking calls with a timeout, against the
 * broker's libzmq ROUTER, which cannot tell it from a libzmq DEALER and
 * reads the caller's credentials from the socket (SO_PEERCRED). Everything
 * else (tcp://, CURVE, the broker, the workers, gpuflock-cli) is libzmq
 * (net/router.h, net/dealer.h). */
#ifndef GF_ZMTP_H
#define GF_ZMTP_H

#include "net/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gf_zmtp gf_zmtp;

/* Connect to the ZMTP peer listening on the unix socket `path` and finish
 * the greeting and the NULL handshake within timeout_ms. Returns NULL with
 * the reason in err (the path and what went wrong). The first request must
 * wait for this: libzmq 4.3's ROUTER drops a connection whose message
 * arrives before it has sent its own READY (src/null_mechanism.cpp,
 * process_handshake_command: a second frame is an unexpected command;
 * tests/unit/test_router.c). */
gf_zmtp *gf_zmtp_connect(const char *path, int timeout_ms, char *err, size_t errlen);
void gf_zmtp_destroy(gf_zmtp **self_p);

/* Send one message of n frames (frames[i] of lens[i] bytes), all or none.
 * Returns 0, or GF_EIO (the peer went away; err says how). */
int gf_zmtp_send(gf_zmtp *self, const void *const *frames, const size_t *lens, size_t n,
                 char *err, size_t errlen);

/* Receive one message: its last frame into *body (malloc'ed, the caller
 * frees) and the number of frames before it into *n_before (for a DEALER
 * talking to a REQ-style ROUTER: the empty delimiter). Commands from the
 * peer (PING, ...) are answered or skipped. Frames over max_frame bytes are
 * refused. Returns 0; GF_ETIMEDOUT when nothing complete arrived within
 * timeout_ms (< 0: no limit; 0: only what can be read without waiting);
 * GF_EINTR on a signal; GF_ETOOBIG; GF_EPROTO for a malformed frame;
 * GF_EIO when the peer closed the connection. */
int gf_zmtp_recv(gf_zmtp *self, int timeout_ms, size_t max_frame, uint8_t **body, size_t *len,
                 size_t *n_before, char *err, size_t errlen);

/* gf_msg over the connection: m encoded as one body frame, after an empty
 * delimiter when delim (REQ style). Returns 0, or an error with err filled
 * (GF_EINVAL / GF_ETOOBIG: m does not encode; GF_EIO: the peer is gone). */
int gf_zmtp_send_msg(gf_zmtp *self, const gf_msg *m, bool delim, char *err, size_t errlen);

/* One message (an empty delimiter before it is skipped) decoded into *out,
 * waiting as gf_zmtp_recv does (timeout_ms 0: only what is already there).
 * Returns gf_zmtp_recv's codes, or GF_EPROTO for a body that does not
 * decode or a message of more than two frames (err says why). */
int gf_zmtp_recv_msg(gf_zmtp *self, int timeout_ms, gf_msg *out, char *err, size_t errlen);

/* ---- the codec, for peers written by hand (the tests' hostile peers) */

#define GF_ZMTP_GREETING_LEN 64
#define GF_ZMTP_MORE 1         /* frame flags */
#define GF_ZMTP_LONG 2
#define GF_ZMTP_COMMAND 4
/* Longest greeting + READY that gf_zmtp_hello writes. */
#define GF_ZMTP_HELLO_MAX (GF_ZMTP_GREETING_LEN + 2 + 6 + 1 + 11 + 4 + 6)

/* Our greeting (version 3.1, mechanism NULL, as_server) followed by our
 * READY command with Socket-Type socket_type ("DEALER", "PUB") into out
 * (GF_ZMTP_HELLO_MAX bytes). Returns its length. */
size_t gf_zmtp_hello(uint8_t out[GF_ZMTP_HELLO_MAX], const char *socket_type, int as_server);

/* A frame's flags and size into hdr (2 or 9 bytes); returns its length. */
size_t gf_zmtp_frame_header(uint8_t hdr[9], uint8_t flags, size_t len);

#endif
