/* dealer.c — a DEALER connection to the broker over libzmq (see dealer.h).
 *
 * A thin layer over gf_wire_socket and gf_wire_recv / gf_wire_send that
 * keeps what a reconnect needs (the endpoint and the configuration). */
#include "net/dealer.h"

#include "common/error.h"
#include "common/util.h"
#include "net/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gf_dealer {
    void *zctx;               /* borrowed */
    char *endpoint;
    const gf_config *cfg;     /* borrowed: the CURVE keys */
    bool delim;               /* an empty frame before every body (REQ style) */
    void *sock;               /* libzmq DEALER; NULL after a failed reconnect */
};

gf_dealer *gf_dealer_connect(void *zctx, const char *endpoint, const gf_config *cfg, bool delim,
                             char *err, size_t errlen)
{
    gf_dealer *self = gf_calloc(1, sizeof(*self));
    self->zctx = zctx;
    self->endpoint = gf_strdup(endpoint);
    self->cfg = cfg;
    self->delim = delim;
    if (gf_dealer_reconnect(self, err, errlen) != 0)
        gf_dealer_destroy(&self);
    return self;
}

void gf_dealer_destroy(gf_dealer **self_p)
{
    gf_dealer *self = *self_p;
    if (!self)
        return;
    if (self->sock)
        zmq_close(self->sock);
    free(self->endpoint);
    free(self);
    *self_p = NULL;
}

int gf_dealer_reconnect(gf_dealer *self, char *err, size_t errlen)
{
    if (self->sock)
        zmq_close(self->sock);
    self->sock = gf_wire_socket(self->zctx, ZMQ_DEALER, self->endpoint, self->cfg, err, errlen);
    if (self->sock)
        return 0;
    return strncmp(self->endpoint, "tcp://", 6) == 0 && !self->cfg->curve_public_key ? GF_ECONFIG
                                                                                    : GF_EIO;
}

void gf_dealer_pollitem(gf_dealer *self, zmq_pollitem_t *item)
{
    /* no socket (a reconnect failed): a descriptor that never polls in */
    *item = (zmq_pollitem_t){ self->sock, self->sock ? 0 : -1, self->sock ? ZMQ_POLLIN : 0, 0 };
}

int gf_dealer_send(gf_dealer *self, const gf_msg *m)
{
    if (!self->sock)
        return GF_EIO;
    return gf_wire_send(self->sock, NULL, self->delim, m);
}

int gf_dealer_recv(gf_dealer *self, int timeout_ms, gf_msg *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!self->sock) {
        snprintf(err, errlen, "no socket to %s", self->endpoint);
        return GF_EIO;
    }
    if (timeout_ms != 0) {
        zmq_pollitem_t it = { self->sock, 0, ZMQ_POLLIN, 0 };
        int n = zmq_poll(&it, 1, timeout_ms);
        if (n < 0 && errno == EINTR)
            return GF_EINTR;
        if (n < 0) {
            snprintf(err, errlen, "zmq_poll: %s", zmq_strerror(errno));
            return GF_EIO;
        }
        if (n == 0)
            return GF_ETIMEDOUT;
    }
    return gf_wire_recv(self->sock, GF_WIRE_DEALER, ZMQ_DONTWAIT, NULL, out, err, errlen);
}
