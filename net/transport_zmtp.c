/* transport_zmtp.c — the static front's backend: gf_msg over net/zmtp on
 * an ipc:// endpoint, no libzmq, which a static program cannot link (see
 * transport.h). */
#include "net/transport.h"

#include "common/error.h"
#include "net/zmtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONNECT_MS 5000

static bool zmtp_supports(const gf_config *cfg)
{
    return gf_config_ipc_path(cfg->client_endpoint) != NULL;
}

static void *zmtp_open(const gf_config *cfg, char *err, size_t errlen)
{
    /* the broker's ROUTER is libzmq's, which drops a connection whose
     * request comes before its own READY went out (net/zmtp.h): the
     * handshake is finished first */
    return gf_zmtp_connect(gf_config_ipc_path(cfg->client_endpoint), CONNECT_MS, err, errlen);
}

static int zmtp_send(void *conn, const gf_msg *m, char *err, size_t errlen)
{
    return gf_zmtp_send_msg(conn, m, true, err, errlen);
}

static int zmtp_recv(void *conn, int timeout_ms, gf_msg *out, char *err, size_t errlen)
{
    return gf_zmtp_recv_msg(conn, timeout_ms, out, err, errlen);
}

static void zmtp_close(void **conn_p)
{
    gf_zmtp *z = *conn_p;
    gf_zmtp_destroy(&z);
    *conn_p = NULL;
}

const gf_transport gf_transport_zmtp = {
    .name = "zmtp",
    .supports = zmtp_supports,
    .open = zmtp_open,
    .send = zmtp_send,
    .recv = zmtp_recv,
    .close = zmtp_close,
};
