/* lockpair.c — the cost of one lock acquire/release pair: gf_lock (what
 * gpuflock's commands use) against raw flock(2) (what flock(1) does), on
 * the same file, uncontended, in one process.
 *
 *   build/bench/lock/lockpair FILE [ITERS] [ROUNDS]
 *
 * Three pairs are measured: exclusive on an open descriptor (lock + unlock:
 * gf_lock adds the check that the path still names the locked inode),
 * shared on an open descriptor (gf_lock also passes the fairness gate: a
 * shared lock and unlock of <FILE>.gate around it), and exclusive from
 * scratch (open + lock + unlock + close, as each flock(1) run does; gf_lock
 * adds the lock folders' ownership checks). The two
 * sides alternate round by round so drift in machine load hits both; the
 * median round is reported, in ns per pair, with the ratio gf/raw. */
#include "common/lock.h"
#include "common/log.h"
#include "common/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

typedef void (*pair_fn)(const char *path, void *ctx);

static void gf_open_pair(const char *path, void *ctx)
{
    gf_lock *l = ctx;
    (void)path;
    if (gf_lock_wait(l, GF_LOCK_EXCLUSIVE, -1, NULL) != 0)
        abort();
    gf_lock_release(l);
}

static void raw_open_pair(const char *path, void *ctx)
{
    int fd = *(int *)ctx;
    (void)path;
    if (flock(fd, LOCK_EX) != 0 || flock(fd, LOCK_UN) != 0)
        abort();
}

static void gf_shared_pair(const char *path, void *ctx)
{
    gf_lock *l = ctx;
    (void)path;
    if (gf_lock_wait(l, GF_LOCK_SHARED, -1, NULL) != 0)
        abort();
    gf_lock_release(l);
}

static void raw_shared_pair(const char *path, void *ctx)
{
    int fd = *(int *)ctx;
    (void)path;
    if (flock(fd, LOCK_SH) != 0 || flock(fd, LOCK_UN) != 0)
        abort();
}

static void gf_fresh_pair(const char *path, void *ctx)
{
    (void)ctx;
    gf_lock *l = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    if (!l || gf_lock_wait(l, GF_LOCK_EXCLUSIVE, -1, NULL) != 0)
        abort();
    gf_lock_destroy(&l);
}

static void raw_fresh_pair(const char *path, void *ctx)
{
    (void)ctx;
    int fd = open(path, O_RDONLY | O_CREAT | O_NOCTTY | O_CLOEXEC, 0666);
    if (fd < 0 || flock(fd, LOCK_EX) != 0)
        abort();
    close(fd);   /* as flock(1): the lock goes with the last descriptor */
}

static double round_ns(pair_fn fn, const char *path, void *ctx, int iters)
{
    uint64_t t0 = gf_now_ns();
    for (int i = 0; i < iters; i++)
        fn(path, ctx);
    return (double)(gf_now_ns() - t0) / iters;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void compare(const char *what, pair_fn gf, void *gf_ctx, pair_fn raw, void *raw_ctx,
                    const char *path, int iters, int rounds)
{
    double *g = gf_calloc((size_t)rounds, sizeof *g), *r = gf_calloc((size_t)rounds, sizeof *r);
    for (int k = 0; k < rounds; k++) {
        g[k] = round_ns(gf, path, gf_ctx, iters);
        r[k] = round_ns(raw, path, raw_ctx, iters);
    }
    qsort(g, (size_t)rounds, sizeof *g, cmp_double);
    qsort(r, (size_t)rounds, sizeof *r, cmp_double);
    double gm = g[rounds / 2], rm = r[rounds / 2];
    printf("%-34s %10.0f %10.0f %8.2fx\n", what, gm, rm, gm / rm);
    free(g);
    free(r);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: lockpair FILE [ITERS] [ROUNDS]\n");
        return 64;
    }
    const char *path = argv[1];
    int iters = argc > 2 ? atoi(argv[2]) : 20000;
    int rounds = argc > 3 ? atoi(argv[3]) : 21;
    if (iters < 1 || rounds < 1) {
        fprintf(stderr, "lockpair: ITERS and ROUNDS must be positive\n");
        return 64;
    }
    gf_log_init("lockpair", GF_LOG_WARN);
    gf_lock *l = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (!l || fd < 0) {
        fprintf(stderr, "lockpair: cannot open %s\n", path);
        return 66;
    }
    printf("lock acquire/release pair, ns (median of %d rounds x %d pairs)\n", rounds, iters);
    printf("%-34s %10s %10s %9s\n", "", "gf_lock", "flock(2)", "ratio");
    compare("lock+unlock, open descriptor", gf_open_pair, l, raw_open_pair, &fd, path, iters,
            rounds);
    compare("shared lock+unlock, open desc.", gf_shared_pair, l, raw_shared_pair, &fd, path, iters,
            rounds);
    compare("open+lock+unlock+close", gf_fresh_pair, NULL, raw_fresh_pair, NULL, path, iters,
            rounds);
    gf_lock_destroy(&l);
    close(fd);
    return 0;
}
