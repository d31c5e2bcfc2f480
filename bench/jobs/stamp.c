/* stamp.c — the job the submit-to-start benchmarks run: it writes the
 * wall-clock time (CLOCK_REALTIME, nanoseconds) at its first instruction
 * to FILE and exits. Static and C library only, so that its own start adds
 * no dynamic loading to what is measured (`sh -c 'date +%s%N > FILE'`, the
 * measure before it, added a shell's start and a dynamic `date`'s:
 * bench/RESULTS.md). Usage: stamp FILE */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    if (argc != 2) {
        fprintf(stderr, "usage: stamp FILE\n");
        return 64;
    }
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld%09ld\n", (long long)t.tv_sec, t.tv_nsec);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, buf, (size_t)n) != n) {
        perror(argv[1]);
        return 1;
    }
    return close(fd) == 0 ? 0 : 1;
}
