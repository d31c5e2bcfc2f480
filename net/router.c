/* router.c — the broker's ROUTER endpoints over libzmq (see router.h).
 *
 * A thin layer: the socket comes from gf_wire_socket, messages go through
 * gf_wire_recv / gf_wire_send, and the one thing added is whether the
 * endpoint is ipc://, where (and only where) the kernel's credentials of a
 * peer are read. */
#include "net/router.h"

#include "common/util.h"

#include <stdlib.h>
#include <unistd.h>

struct gf_router {
    void *sock;               /* libzmq ROUTER, bound */
    char *path;               /* an ipc:// endpoint's socket file (peers carry the kernel's
                               * credentials there); NULL on tcp:// */
};

gf_router *gf_router_bind(void *zctx, const char *endpoint, const gf_config *cfg, char *err,
                          size_t errlen)
{
    void *s = gf_wire_socket(zctx, ZMQ_ROUTER, endpoint, cfg, err, errlen);
    if (!s)
        return NULL;
    gf_router *self = gf_calloc(1, sizeof(*self));
    self->sock = s;
    const char *path = gf_config_ipc_path(endpoint);
    self->path = path ? gf_strdup(path) : NULL;
    return self;
}

void gf_router_destroy(gf_router **self_p)
{
    gf_router *self = *self_p;
    if (!self)
        return;
    zmq_close(self->sock);
    /* libzmq 4.3 leaves the file (src/ipc_listener.cpp, close: it unlinks
     * only a file in a directory it made); its listener, still open until
     * libzmq's I/O thread closes it, takes nobody new once the name is gone */
    if (self->path)
        unlink(self->path);
    free(self->path);
    free(self);
    *self_p = NULL;
}

void gf_router_pollitem(gf_router *self, zmq_pollitem_t *item)
{
    *item = (zmq_pollitem_t){ self->sock, 0, ZMQ_POLLIN, 0 };
}

int gf_router_recv(gf_router *self, gf_peer *peer, gf_msg *out, char *err, size_t errlen)
{
    return gf_wire_recv(self->sock, self->path ? GF_WIRE_ROUTER_IPC : GF_WIRE_ROUTER, ZMQ_DONTWAIT,
                        peer, out, err, errlen);
}

int gf_router_send(gf_router *self, const gf_peer *peer, const gf_msg *m)
{
    return gf_wire_send(self->sock, peer, peer->delim, m);
}
