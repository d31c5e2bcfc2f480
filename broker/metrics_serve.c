/* metrics_serve.c — the metrics text served and written (see
 * metrics_serve.h).
 *
 * HTTP: libmicrohttpd with its own polling thread (connections limited
 * and timed out, so idle or slow clients cost that thread a descriptor
 * each and nothing more); GET or HEAD /metrics answers the last snapshot
 * as text/plain; version=0.0.4, anything else 404 or 405. The textfile: a
 * thread that every textfile_interval_s writes the last snapshot into
 * ".<name>.tmp" beside the file (O_EXCL, O_NOFOLLOW: nothing planted
 * there is followed) and renames it over the name, which node_exporter
 * then reads whole or not at all. A write that fails (a full disk) is
 * said once and tried again the next interval. Both threads start with
 * every signal blocked: signals stay the loop's. */
#include "broker/metrics_serve.h"

#include "common/error.h"
#include "common/listenaddr.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HTTP_CONNECTIONS 32     /* at once; more wait in the kernel's backlog */
#define HTTP_TIMEOUT_S 10       /* an idle connection is closed after this */
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct gf_metrics_pub {
    pthread_mutex_t lock;     /* guards text, len and stop */
    char *text;               /* the last snapshot published */
    size_t len;
    struct MHD_Daemon *http;  /* metrics.listen, NULL: none */
    int port;                 /* the endpoint's port as bound */
    /* the textfile: */
    char *file;               /* metrics.textfile, NULL: none */
    char *tmp_name;           /* ".<name>.tmp", in the same folder */
    const char *name;         /* the file's name in its folder (in file) */
    int dirfd;                /* its folder */
    int interval_s;
    pthread_t writer;
    bool writer_started;
    pthread_cond_t wake;      /* stop, for the writer */
    bool stop;
    bool write_failing;       /* the last write failed (said once) */
};

/* A copy of the snapshot (the caller frees). */
static char *snapshot(gf_metrics_pub *self, size_t *len)
{
    pthread_mutex_lock(&self->lock);
    char *copy = gf_malloc(self->len + 1);
    memcpy(copy, self->text ? self->text : "", self->len);
    copy[self->len] = '\0';
    *len = self->len;
    pthread_mutex_unlock(&self->lock);
    return copy;
}

void gf_metrics_pub_set(gf_metrics_pub *self, char **text, size_t len)
{
    pthread_mutex_lock(&self->lock);
    char *old = self->text;
    self->text = *text;
    self->len = len;
    pthread_mutex_unlock(&self->lock);
    *text = NULL;
    free(old);
}

/* ---- HTTP -------------------------------------------------------------- */

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, char *body, size_t len,
                              const char *type)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *msg)
{
    return answer(c, status, gf_strdup(msg), strlen(msg), "text/plain; charset=utf-8");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **req)
{
    (void)version;
    (void)upload;
    gf_metrics_pub *self = cls;
    if (!*req) {          /* the headers: wait for the whole request */
        static int seen;
        *req = &seen;
        return MHD_YES;
    }
    if (*upload_size) {   /* a body nobody asked for: read and dropped */
        *upload_size = 0;
        return MHD_YES;
    }
    bool get = !strcmp(method, MHD_HTTP_METHOD_GET), head = !strcmp(method, MHD_HTTP_METHOD_HEAD);
    if (strcmp(url, "/metrics") != 0)
        return answer_text(c, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
    if (!get && !head)
        return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or HEAD only\n");
    size_t len;
    char *text = snapshot(self, &len);
    return answer(c, MHD_HTTP_OK, text, len, CONTENT_TYPE);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char text[512];
    vsnprintf(text, sizeof text, fmt, ap);
    GF_WARN("metrics endpoint: %s", text);
}

static int start_http(gf_metrics_pub *self, const gf_config *cfg)
{
    gf_listen_addr a;
    char why[256];
    if (gf_listen_addr_parse(cfg->metrics_listen, &a, why, sizeof why) != 0) {
        GF_ERROR("metrics.listen %s: %s", cfg->metrics_listen, why);   /* the config checked it */
        return GF_ECONFIG;
    }
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (a.addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    self->http = MHD_start_daemon(flags, (uint16_t)a.port, NULL, NULL, on_request, self,
                                  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,   /* first */
                                  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a.addr,
                                  MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTIONS,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
                                  MHD_OPTION_END);
    if (!self->http) {
        GF_ERROR("metrics.listen %s: cannot serve there (is the port in use?)",
                 cfg->metrics_listen);
        return GF_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(self->http, MHD_DAEMON_INFO_BIND_PORT);
    self->port = info ? info->port : a.port;
    a.port = self->port;
    char where[80];
    gf_listen_addr_format(&a, where, sizeof where);
    GF_INFO("metrics at http://%s/metrics%s", where,
            a.loopback ? "" : " (not the loopback: metrics.allow_remote)");
    return 0;
}

/* ---- the textfile ------------------------------------------------------ */

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The snapshot into the file, whole, through the temporary name. */
static void write_textfile(gf_metrics_pub *self)
{
    size_t len;
    char *text = snapshot(self, &len);
    unlinkat(self->dirfd, self->tmp_name, 0);   /* one left by a crash (or planted) */
    int fd = openat(self->dirfd, self->tmp_name,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    int err = 0;
    if (fd < 0 || write_all(fd, text, len) != 0)
        err = errno ? errno : EIO;
    if (fd >= 0 && close(fd) != 0 && !err)
        err = errno;
    if (!err && renameat(self->dirfd, self->tmp_name, self->dirfd, self->name) != 0)
        err = errno;
    free(text);
    if (err) {
        if (fd >= 0)
            unlinkat(self->dirfd, self->tmp_name, 0);
        if (!self->write_failing)
            GF_WARN("metrics.textfile %s: cannot write it: %s; trying again every %d s",
                    self->file, strerror(err), self->interval_s);
        self->write_failing = true;
    } else if (self->write_failing) {
        GF_INFO("metrics.textfile %s: written again", self->file);
        self->write_failing = false;
    }
}

static void *writer_main(void *arg)
{
    gf_metrics_pub *self = arg;
    pthread_mutex_lock(&self->lock);
    while (!self->stop) {
        pthread_mutex_unlock(&self->lock);
        write_textfile(self);
        pthread_mutex_lock(&self->lock);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += self->interval_s;
        while (!self->stop &&
               pthread_cond_timedwait(&self->wake, &self->lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&self->lock);
    return NULL;
}

static int start_textfile(gf_metrics_pub *self, const gf_config *cfg)
{
    self->file = gf_strdup(cfg->metrics_textfile);
    self->interval_s = cfg->metrics_textfile_interval_s;
    char *slash = strrchr(self->file, '/');
    self->name = slash + 1;
    self->tmp_name = gf_strfmt(".%s.tmp", self->name);
    char *dir = slash == self->file ? gf_strdup("/")
                                    : gf_strfmt("%.*s", (int)(slash - self->file), self->file);
    self->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (self->dirfd < 0) {
        GF_ERROR("metrics.textfile %s: its folder %s: %s (node_exporter's "
                 "--collector.textfile.directory)", self->file, dir, strerror(errno));
        free(dir);
        return GF_EIO;
    }
    free(dir);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&self->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&self->writer, NULL, writer_main, self) != 0) {
        GF_ERROR("metrics.textfile %s: cannot start its writer thread", self->file);
        return GF_EIO;
    }
    self->writer_started = true;
    GF_INFO("metrics written to %s every %d s", self->file, self->interval_s);
    return 0;
}

gf_metrics_pub *gf_metrics_pub_start(const gf_config *cfg, char **text, size_t len, int *rc)
{
    *rc = 0;
    if (!cfg->metrics_listen && !cfg->metrics_textfile) {
        free(*text);
        *text = NULL;
        return NULL;
    }
    gf_metrics_pub *self = gf_calloc(1, sizeof *self);
    pthread_mutex_init(&self->lock, NULL);
    self->dirfd = -1;
    self->text = *text;
    self->len = len;
    *text = NULL;
    /* the threads are born with every signal blocked: the loop's alone */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    if (cfg->metrics_listen)
        *rc = start_http(self, cfg);
    if (!*rc && cfg->metrics_textfile)
        *rc = start_textfile(self, cfg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (*rc)
        gf_metrics_pub_stop(&self);
    return self;
}

int gf_metrics_pub_port(const gf_metrics_pub *self)
{
    return self && self->http ? self->port : 0;
}

void gf_metrics_pub_stop(gf_metrics_pub **self_p)
{
    gf_metrics_pub *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    if (self->http)
        MHD_stop_daemon(self->http);
    if (self->writer_started) {
        pthread_mutex_lock(&self->lock);
        self->stop = true;
        pthread_cond_signal(&self->wake);
        pthread_mutex_unlock(&self->lock);
        pthread_join(self->writer, NULL);
        /* a broker that is gone publishes nothing (node_exporter would
         * serve the last numbers as if they were current) */
        unlinkat(self->dirfd, self->name, 0);
        pthread_cond_destroy(&self->wake);
    }
    if (self->dirfd >= 0)
        close(self->dirfd);
    free(self->file);
    free(self->tmp_name);
    free(self->text);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}
