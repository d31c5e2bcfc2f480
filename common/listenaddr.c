/* listenaddr.c — "HOST:PORT" into a socket address (see listenaddr.h). */
#include "common/listenaddr.h"

#include "common/error.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int bad(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return GF_EINVAL;
}

int gf_listen_addr_parse(const char *text, gf_listen_addr *out, char *why, size_t len)
{
    memset(out, 0, sizeof *out);
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || !colon[1])
        return bad(why, len, "'%s' is not HOST:PORT (127.0.0.1:9464, [::1]:9464)", text);
    char host[64];
    size_t hl = (size_t)(colon - text);
    bool v6 = text[0] == '[';
    if (v6) {
        if (hl < 3 || text[hl - 1] != ']')
            return bad(why, len, "'%s': an IPv6 address is written in brackets: [::1]:9464", text);
        hl -= 2;
        text++;
    }
    if (hl >= sizeof host)
        return bad(why, len, "'%s': the host is too long", text);
    memcpy(host, text, hl);
    host[hl] = '\0';
    char *end = NULL;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (*end || errno || colon[1] == '-' || colon[1] == '+')
        return bad(why, len, "port '%s' is not a number", colon + 1);
    if (port < 0 || port > 65535)
        return bad(why, len, "port %ld is out of range [0, 65535]", port);
    out->port = (int)port;
    if (!v6 && !strcmp(host, "localhost"))
        snprintf(host, sizeof host, "127.0.0.1");
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&out->addr;
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
            return bad(why, len, "'%s' is not an IPv6 address (names are not resolved)", host);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        out->len = sizeof *a;
        const uint8_t *b = a->sin6_addr.s6_addr;
        out->loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
                        (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && b[12] == 127);
        return 0;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)&out->addr;
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
        return bad(why, len, "'%s' is not an IPv4 address (names but localhost are not resolved; "
                   "IPv6 is written [::1])", host);
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    out->len = sizeof *a;
    out->loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    return 0;
}

void gf_listen_addr_format(const gf_listen_addr *a, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    if (a->addr.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&a->addr)->sin6_addr, host, sizeof host);
        snprintf(buf, len, "[%s]:%d", host, a->port);
    } else {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)&a->addr)->sin_addr, host, sizeof host);
        snprintf(buf, len, "%s:%d", host, a->port);
    }
}
