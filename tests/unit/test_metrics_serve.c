/* test_metrics_serve.c — the metrics text served over real HTTP on the
 * loopback and written as a node_exporter textfile: what a scrape reads is
 * the last text published, paths and methods other than GET /metrics are
 * refused, the file is replaced whole (a link planted at its temporary
 * name is not followed) and removed at the stop, and a port in use fails
 * the start. */
#include "broker/metrics_serve.h"
#include "common/config.h"
#include "common/util.h"
#include "tests/unit/tmpdir.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* The whole answer to one HTTP/1.0 request on 127.0.0.1:port (the caller
 * frees). */
static char *http(int port, const char *request)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s >= 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(write(s, request, strlen(request)), (ssize_t)strlen(request));
    size_t cap = 1 << 16, n = 0;
    char *buf = gf_malloc(cap);
    ssize_t got;
    while ((got = read(s, buf + n, cap - 1 - n)) > 0)
        n += (size_t)got;
    buf[n] = '\0';
    close(s);
    return buf;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = gf_calloc(1 << 16, 1);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static gf_config *config(const char *dir, const char *listen)
{
    char *text = gf_strfmt("metrics:\n  listen: '%s'\n  textfile: %s/gpuflock.prom\n"
                           "  textfile_interval_s: 1\n", listen, dir);
    gf_config *cfg = NULL;
    assert_int_equal(gf_config_parse("t.yaml", text, strlen(text), &cfg), 0);
    free(text);
    return cfg;
}

/* Wait up to 3 s for the file to hold want. */
static bool file_holds(const char *path, const char *want)
{
    for (int i = 0; i < 60; i++) {
        char *got = slurp(path);
        bool same = got && !strcmp(got, want);
        free(got);
        if (same)
            return true;
        usleep(50000);
    }
    return false;
}

static void test_serve_and_write(void **state)
{
    (void)state;
    char dir[256];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "test_metrics_serve"), 0);
    gf_config *cfg = config(dir, "127.0.0.1:0");
    char *text = gf_strdup("# TYPE gpuflock_x gauge\ngpuflock_x 1\n");
    int rc = -1;
    gf_metrics_pub *pub = gf_metrics_pub_start(cfg, &text, strlen(text), &rc);
    assert_int_equal(rc, 0);
    assert_non_null(pub);
    assert_null(text);                       /* taken */
    int port = gf_metrics_pub_port(pub);
    assert_true(port > 0);

    char *r = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
    assert_true(!strncmp(r, "HTTP/1.0 200", 12) || !strncmp(r, "HTTP/1.1 200", 12));
    assert_non_null(strstr(r, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
    assert_non_null(strstr(r, "\r\n\r\n# TYPE gpuflock_x gauge\ngpuflock_x 1\n"));
    free(r);
    r = http(port, "GET /nope HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(r, " 404 "));
    free(r);
    r = http(port, "POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc");
    assert_non_null(strstr(r, " 405 "));
    assert_non_null(strstr(r, "Allow: GET, HEAD\r\n"));
    free(r);
    r = http(port, "HEAD /metrics HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(r, " 200 "));
    assert_null(strstr(r, "gpuflock_x 1"));  /* no body */
    free(r);

    char *file = gf_strfmt("%s/gpuflock.prom", dir), *tmp = gf_strfmt("%s/.gpuflock.prom.tmp", dir);
    char *target = gf_strfmt("%s/target", dir);
    assert_true(file_holds(file, "# TYPE gpuflock_x gauge\ngpuflock_x 1\n"));
    FILE *f = fopen(target, "w");
    assert_non_null(f);
    fputs("untouched\n", f);
    fclose(f);
    assert_int_equal(symlink(target, tmp), 0);   /* planted at the temporary name */

    text = gf_strdup("gpuflock_x 2\n");
    gf_metrics_pub_set(pub, &text, strlen("gpuflock_x 2\n"));
    assert_null(text);
    r = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(r, "\r\n\r\ngpuflock_x 2\n"));
    free(r);
    assert_true(file_holds(file, "gpuflock_x 2\n"));
    char *t = slurp(target);
    assert_string_equal(t, "untouched\n");
    free(t);
    struct stat st;
    assert_int_equal(lstat(file, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0644);   /* node_exporter reads it */

    /* the port is taken: a second endpoint there fails to start */
    char *where = gf_strfmt("127.0.0.1:%d", port);
    gf_config *again = config(dir, where);
    char *t2 = gf_strdup("x 1\n");
    int rc2 = 0;
    assert_null(gf_metrics_pub_start(again, &t2, 4, &rc2));
    assert_true(rc2 < 0);
    free(t2);
    gf_config_destroy(&again);
    free(where);

    gf_metrics_pub_stop(&pub);
    assert_null(pub);
    gf_metrics_pub_stop(&pub);                   /* safe twice */
    assert_int_equal(lstat(file, &st), -1);      /* a stopped broker publishes nothing */
    gf_config_destroy(&cfg);
    assert_int_equal(gf_test_rmtree(dir), 0);
    free(file);
    free(tmp);
    free(target);
}

/* Nothing configured: nothing started, no error. */
static void test_nothing_to_serve(void **state)
{
    (void)state;
    gf_config *cfg = gf_config_defaults();
    char *text = gf_strdup("x 1\n");
    int rc = -1;
    assert_null(gf_metrics_pub_start(cfg, &text, 4, &rc));
    assert_int_equal(rc, 0);
    assert_null(text);
    assert_int_equal(gf_metrics_pub_port(NULL), 0);
    gf_config_destroy(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serve_and_write),
        cmocka_unit_test(test_nothing_to_serve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
