/* link.h — the worker's connection to the broker's worker endpoint.
 *
 * On an ipc:// endpoint (the default) the worker speaks ZMTP itself
 * (net/zmtp.c) in its own thread, as the broker does on its side
 * (net/router.h): with libzmq's DEALER every job, progress and result
 * message crossed to libzmq's I/O thread and back through an eventfd.
 * On tcp:// (CURVE) it keeps libzmq's DEALER. The two differ in one way the
 * agent sees: libzmq reconnects by itself and queues what is sent
 * meanwhile, while an ipc:// link that lost its broker says so
 * (gf_link_up false) and is made again by gf_link_reconnect; nothing sent
 * while it is down is kept, which the agent's READY covers (it lists the
 * jobs still running and the results not yet safe with the broker). */
#ifndef GF_LINK_H
#define GF_LINK_H

#include "common/config.h"
#include "net/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <zmq.h>

typedef struct gf_link gf_link;

/* A link to cfg->worker_endpoint, connected if the broker is there (see
 * gf_link_up). zctx: libzmq's context, for a tcp:// endpoint. Returns NULL
 * after logging when the endpoint cannot be used at all. */
gf_link *gf_link_new(const gf_config *cfg, void *zctx);
void gf_link_destroy(gf_link **self_p);

/* Drop the connection and make a new one: 0, or GF_EIO when no broker
 * answers now (try again later). */
int gf_link_reconnect(gf_link *self);

/* Is there a connection to send on and poll? */
bool gf_link_up(const gf_link *self);

/* What zmq_poll should watch for the broker's messages. Returns false
 * (item untouched) while the link is down: nothing to watch. */
bool gf_link_pollitem(gf_link *self, zmq_pollitem_t *item);

/* Send m to the broker: 0, or GF_EIO when the link is down or went down
 * (GF_EINVAL / GF_ETOOBIG: m does not encode). */
int gf_link_send(gf_link *self, const gf_msg *m);

/* Take one message without waiting: 0 with *out; GF_ETIMEDOUT when none;
 * GF_EPROTO / GF_ETOOBIG for one that does not decode (err says why; an
 * ipc:// link is down after it); GF_EIO when the link is down (or libzmq
 * failed). */
int gf_link_recv(gf_link *self, gf_msg *out, char *err, size_t errlen);

#endif
