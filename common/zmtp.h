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

#include <stddef.h>
#include <stdint.h>

typedef struct gf_zmtp gf_zmtp;

/* Connect to the ZMTP peer listening on the unix socket `path` and finish
 * the greeting and the NULL handshake within timeout_ms. Returns NULL with
 * the reason in err (the path and what went wrong). */
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
 * timeout_ms (< 0: no limit); GF_EINTR on a signal; GF_ETOOBIG; GF_EPROTO
 * for a malformed frame; GF_EIO when the peer closed the connection. */
int gf_zmtp_recv(gf_zmtp *self, int timeout_ms, size_t max_frame, uint8_t **body, size_t *len,
                 size_t *n_before, char *err, size_t errlen);

#endif
