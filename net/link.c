/* link.c — the worker's connection to the broker (see link.h). */
#include "net/link.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "net/wire.h"
#include "net/zmtp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long a connect waits for the broker's greeting: it answers at once
 * unless it is stuck, and then the worker has nothing to do either. */
#define CONNECT_MS 2000

struct gf_link {
    const gf_config *cfg;     /* borrowed */
    void *zctx;               /* borrowed; libzmq backend only */
    void *zsock;              /* libzmq DEALER (tcp://), or NULL */
    const char *path;         /* ipc:// socket path (in cfg), or NULL */
    gf_zmtp *z;               /* own backend: the connection, NULL while down */
};

static void *zmq_dealer(gf_link *self)
{
    void *s = zmq_socket(self->zctx, ZMQ_DEALER);
    int zero = 0;
    int64_t maxsz = (int64_t)GF_PROTO_MAX_FRAME + 1024;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxsz, sizeof(maxsz));
    const char *ep = self->cfg->worker_endpoint;
    if (strncmp(ep, "tcp://", 6) == 0 && self->cfg->curve_public_key) {
        char pub[41], sec[41];
        zmq_curve_keypair(pub, sec);
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, self->cfg->curve_public_key, 40);
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, pub, 40);
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, sec, 40);
    }
    if (zmq_connect(s, ep) != 0) {
        GF_ERROR("cannot connect to %s: %s", ep, zmq_strerror(errno));
        zmq_close(s);
        return NULL;
    }
    return s;
}

int gf_link_reconnect(gf_link *self)
{
    if (!self->path) {
        zmq_close(self->zsock);
        self->zsock = zmq_dealer(self);
        return self->zsock ? 0 : GF_EIO;
    }
    gf_zmtp_destroy(&self->z);
    char err[256];
    self->z = gf_zmtp_connect(self->path, CONNECT_MS, err, sizeof(err));
    if (!self->z) {
        GF_DEBUG("broker: %s", err);
        return GF_EIO;
    }
    return 0;
}

gf_link *gf_link_new(const gf_config *cfg, void *zctx)
{
    gf_link *self = gf_calloc(1, sizeof(*self));
    self->cfg = cfg;
    self->zctx = zctx;
    self->path = gf_config_ipc_path(cfg->worker_endpoint);
    if (gf_link_reconnect(self) != 0 && !self->path)
        gf_link_destroy(&self);       /* libzmq refused the endpoint itself */
    return self;
}

void gf_link_destroy(gf_link **self_p)
{
    gf_link *self = *self_p;
    if (!self)
        return;
    if (self->zsock)
        zmq_close(self->zsock);
    gf_zmtp_destroy(&self->z);
    free(self);
    *self_p = NULL;
}

bool gf_link_up(const gf_link *self)
{
    return self->zsock || self->z;
}

bool gf_link_pollitem(gf_link *self, zmq_pollitem_t *item)
{
    if (!gf_link_up(self))
        return false;
    *item = (zmq_pollitem_t){ self->zsock, self->z ? gf_zmtp_fd(self->z) : -1, ZMQ_POLLIN, 0 };
    return true;
}

int gf_link_send(gf_link *self, const gf_msg *m)
{
    if (self->zsock)
        return gf_wire_send(self->zsock, NULL, false, m);
    if (!self->z)
        return GF_EIO;
    char err[256];
    int rc = gf_zmtp_send_msg(self->z, m, false, err, sizeof(err));
    if (rc == GF_EIO) {
        GF_DEBUG("broker: %s", err);
        gf_zmtp_destroy(&self->z);
    }
    return rc;
}

int gf_link_recv(gf_link *self, gf_msg *out, char *err, size_t errlen)
{
    if (self->zsock)
        return gf_wire_recv(self->zsock, GF_WIRE_DEALER, ZMQ_DONTWAIT, NULL, out, err, errlen);
    memset(out, 0, sizeof(*out));
    if (!self->z) {
        snprintf(err, errlen, "no connection to the broker");
        return GF_EIO;
    }
    int rc = gf_zmtp_recv_msg(self->z, 0, out, err, errlen);
    /* anything but a whole message or nothing yet ends this connection: a
     * stream that ended, a frame over the limit or bytes out of step cannot
     * be read on, and a fresh connection and READY recover any of them */
    if (rc != 0 && rc != GF_ETIMEDOUT && rc != GF_EINTR)
        gf_zmtp_destroy(&self->z);
    return rc;
}
