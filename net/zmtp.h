/* zmtp.h — a ZeroMQ DEALER client on a unix socket, without libzmq.
 *
 * The CLI's job commands talk to gpuflockd once or a few times per call;
 * loading libzmq (and the 17 libraries it pulls in) and starting its I/O
 * thread cost more than the whole request (bench/jobs). This module speaks
 * ZMTP 3.1 (rfc.zeromq.org/spec/23 and 37) itself for the one case the CLI needs:
 * a DEALER with the NULL mechanism on an ipc:// endpoint, blocking calls
 * with a timeout. Everything else (tcp://, CURVE, ROUTER sides) stays with
 * libzmq. The broker's ROUTER cannot tell the two apart, and still reads the
 * caller's credentials from the socket (SO_PEERCRED). */
#ifndef GF_ZMTP_H
#define GF_ZMTP_H

#include "net/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gf_zmtp gf_zmtp;

/* Connect to the ZMTP peer listening on the unix socket `path` and finish
 * the greeting and the NULL handshake within timeout_ms. Returns NULL with
 * the reason in err (the path and what went wrong). */
gf_zmtp *gf_zmtp_connect(const char *path, int timeout_ms, char *err, size_t errlen);

/* The same, but without waiting for the peer's greeting and READY: our own
 * go out at once, the first request may follow right behind them, and the
 * peer's are checked (within timeout_ms of the connect) by the first
 * receive, which reports a wrong peer as gf_zmtp_connect would. Saves one
 * round trip for a one-request client. Only for a peer that reads frames
 * behind a READY before sending its own, as net/router.c does (libzmq
 * 4.3 leaves them unread until more bytes come: a one-request client would
 * hang). */
gf_zmtp *gf_zmtp_connect_ahead(const char *path, int timeout_ms, char *err, size_t errlen);
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

/* The connected socket, for poll (POLLIN: bytes from the peer). */
int gf_zmtp_fd(const gf_zmtp *self);

/* gf_msg over the connection: m encoded as one body frame, after an empty
 * delimiter when delim (REQ style). Returns 0, or an error with err filled
 * (GF_EINVAL / GF_ETOOBIG: m does not encode; GF_EIO: the peer is gone). */
int gf_zmtp_send_msg(gf_zmtp *self, const gf_msg *m, bool delim, char *err, size_t errlen);

/* One message (an empty delimiter before it is skipped) decoded into *out,
 * waiting as gf_zmtp_recv does (timeout_ms 0: only what is already there).
 * Returns gf_zmtp_recv's codes, or GF_EPROTO for a body that does not
 * decode or a message of more than two frames (err says why). */
int gf_zmtp_recv_msg(gf_zmtp *self, int timeout_ms, gf_msg *out, char *err, size_t errlen);

/* ---- the codec, shared with the broker's own ROUTER (net/router.c) */

#define GF_ZMTP_GREETING_LEN 64
#define GF_ZMTP_MORE 1         /* frame flags */
#define GF_ZMTP_LONG 2
#define GF_ZMTP_COMMAND 4
/* Longest greeting + READY that gf_zmtp_hello writes. */
#define GF_ZMTP_HELLO_MAX (GF_ZMTP_GREETING_LEN + 2 + 6 + 1 + 11 + 4 + 6)

/* Our greeting (version 3.1, mechanism NULL, as_server) followed by our
 * READY command with Socket-Type socket_type ("DEALER", "ROUTER") into out
 * (GF_ZMTP_HELLO_MAX bytes). Returns its length. */
size_t gf_zmtp_hello(uint8_t out[GF_ZMTP_HELLO_MAX], const char *socket_type, int as_server);

/* Check a peer's 64-byte greeting: 0, or GF_EPROTO with why (not ZMTP,
 * a version before 3, a mechanism other than NULL). */
int gf_zmtp_check_greeting(const uint8_t *g, char *why, size_t whylen);

/* A frame's flags and size into hdr (2 or 9 bytes); returns its length. */
size_t gf_zmtp_frame_header(uint8_t hdr[9], uint8_t flags, size_t len);

/* The frame starting at buf (avail bytes there): its flags, header length
 * and body size. Returns 1 when the whole frame is there, 0 when more bytes
 * are needed, GF_ETOOBIG when its body exceeds max_frame. */
int gf_zmtp_frame_parse(const uint8_t *buf, size_t avail, size_t max_frame, uint8_t *flags,
                        size_t *hdr, size_t *size);

/* The command frame body b (n bytes) is a PING: its PONG (with up to 16
 * bytes of the PING's context) into pong; returns the PONG's length, 0 when
 * b is not a PING. */
size_t gf_zmtp_pong(const uint8_t *b, size_t n, uint8_t pong[5 + 16]);

/* Is the command frame body b (n bytes) the command `name`? */
int gf_zmtp_is_command(const uint8_t *b, size_t n, const char *name);

/* The value of property `name` in a READY command body b (n bytes) into
 * out (NUL-terminated, truncated to outlen - 1). Returns 1 found, 0 absent,
 * GF_EPROTO when b is not a well-formed READY. */
int gf_zmtp_ready_property(const uint8_t *b, size_t n, const char *name, char *out,
                           size_t outlen);

#endif
