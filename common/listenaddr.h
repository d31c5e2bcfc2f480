/* listenaddr.h — a listening address as the configuration writes it:
 * "HOST:PORT", HOST an IPv4 address, an IPv6 address in brackets or
 * "localhost" (127.0.0.1). No names are resolved: what a daemon binds is
 * what the file says, and whether it is the loopback is known before
 * anything listens (metrics.listen, docs/config.md). */
#ifndef GF_LISTENADDR_H
#define GF_LISTENADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

typedef struct {
    struct sockaddr_storage addr;   /* the address and port, ready for bind(2) */
    socklen_t len;                  /* its length */
    bool loopback;                  /* 127.0.0.0/8 or ::1 (IPv4-mapped loopback too) */
    int port;                       /* 0..65535; 0: the kernel picks one */
} gf_listen_addr;

/* Parse text into *out: 0, or GF_EINVAL with why[len] saying what is
 * wrong ("port 70000 is out of range [0, 65535]"). */
int gf_listen_addr_parse(const char *text, gf_listen_addr *out, char *why, size_t len);

/* "127.0.0.1:9464", "[::1]:9464" into buf (the port as bound). */
void gf_listen_addr_format(const gf_listen_addr *a, char *buf, size_t len);

#endif
