/* lock_probe.c — open a lock file afresh and try it without blocking, as a
 * proof suite checks that it runs under its card's lock.
 *
 *   lock_probe [-s|-x] FILE...   (default -x)
 * For each FILE prints "FILE: would block" or "FILE: free" (the probe's
 * lock is dropped at once). Exit status: 0 all free, 1 some would block,
 * 2 an error. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static int probe(const char *path, int op)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "lock_probe: %s: %s\n", path, strerror(errno));
        return 2;
    }
    int rc = 0;
    if (flock(fd, op | LOCK_NB) == 0) {
        printf("%s: free\n", path);
    } else if (errno == EWOULDBLOCK) {
        printf("%s: would block\n", path);
        rc = 1;
    } else {
        fprintf(stderr, "lock_probe: %s: flock: %s\n", path, strerror(errno));
        rc = 2;
    }
    close(fd);
    return rc;
}

int main(int argc, char **argv)
{
    int op = LOCK_EX, worst = 0, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++)
        op = strcmp(argv[i], "-s") == 0 ? LOCK_SH : LOCK_EX;
    if (i >= argc) {
        fprintf(stderr, "usage: lock_probe [-s|-x] FILE...\n");
        return 2;
    }
    for (; i < argc; i++) {
        int rc = probe(argv[i], op);
        worst = rc > worst ? rc : worst;
    }
    return worst;
}
