/* transport.h — how the CLI reaches gpuflockd: backends behind one table.
 *
 * Two backends: libzmq's DEALER (net/dealer.h), every endpoint, for
 * gpuflock-cli; and for the light `gpuflock` front, a static program that
 * cannot link libzmq, our own ZMTP client (net/zmtp.h) on ipc://
 * endpoints. Each program names the backends it has in its main.c
 * (gf_client_transports); the client takes the first that supports the
 * configured endpoint, and the front hands a command it has none for to
 * gpuflock-cli (gf_client_reaches). The broker cannot tell them apart.
 * Every request travels as [empty delimiter][body], REQ style. */
#ifndef GF_TRANSPORT_H
#define GF_TRANSPORT_H

#include "common/config.h"
#include "net/proto.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct gf_transport {
    const char *name;
    /* can this backend reach cfg->client_endpoint (with its keys)? */
    bool (*supports)(const gf_config *cfg);
    /* a connection, or NULL with the reason in err */
    void *(*open)(const gf_config *cfg, char *err, size_t errlen);
    /* 0, or GF_EIO / GF_EINVAL with err filled */
    int (*send)(void *conn, const gf_msg *m, char *err, size_t errlen);
    /* 0 with *out; GF_ETIMEDOUT, GF_EINTR; GF_EIO when the connection broke
     * (the caller may open a new one); GF_EPROTO / GF_ETOOBIG for a bad
     * reply; GF_EPERM when the broker refuses the connection's security
     * handshake (CURVE: another server key), which asking again cannot
     * mend; err says which */
    int (*recv)(void *conn, int timeout_ms, gf_msg *out, char *err, size_t errlen);
    void (*close)(void **conn_p);
} gf_transport;

extern const gf_transport gf_transport_zmtp;   /* net/transport_zmtp.c: ipc://, no libzmq */
extern const gf_transport gf_transport_zmq;    /* net/transport_zmq.c: libzmq, any endpoint */

/* The backends this program offers, best first, NULL-terminated. Defined
 * by each program that links the client (its main.c). */
extern const gf_transport *const gf_client_transports[];

#endif
