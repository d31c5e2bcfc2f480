/* transport_zmtp.c — the CLI's light backend: gf_msg over common/zmtp on an
 * ipc:// endpoint, no libzmq (see transport.h). */
#include "cli/transport.h"

#include "common/error.h"
#include "common/zmtp.h"

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
    return gf_zmtp_connect(gf_config_ipc_path(cfg->client_endpoint), CONNECT_MS, err, errlen);
}

static int zmtp_send(void *conn, const gf_msg *m, char *err, size_t errlen)
{
    uint8_t *buf;
    size_t len;
    int rc = gf_proto_encode(m, &buf, &len);
    if (rc) {
        snprintf(err, errlen, "cannot encode the request: %s", gf_strerror(rc));
        return rc;
    }
    const void *frames[2] = { "", buf };
    size_t lens[2] = { 0, len };
    rc = gf_zmtp_send(conn, frames, lens, 2, err, errlen);
    free(buf);
    return rc;
}

static int zmtp_recv(void *conn, int timeout_ms, gf_msg *out, char *err, size_t errlen)
{
    uint8_t *body;
    size_t len, before;
    memset(out, 0, sizeof(*out));
    int rc = gf_zmtp_recv(conn, timeout_ms, GF_PROTO_MAX_FRAME, &body, &len, &before, err, errlen);
    if (rc)
        return rc;
    if (before > 1) {
        snprintf(err, errlen, "a reply of %zu frames", before + 1);
        rc = GF_EPROTO;
    } else {
        rc = gf_proto_decode(body, len, out, err, errlen);
    }
    free(body);
    return rc;
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
