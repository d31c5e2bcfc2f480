/* request.h — how the worker gets a spare guard from the fork server
 * (`gpuflock-guard WORKER_PID --serve`) and hands it a job (worker/spare.c
 * to worker/guard/main.c).
 *
 * On the server's descriptor 3, a unix stream socket: each byte the worker
 * writes asks for one spare, with, attached (SCM_RIGHTS) where the worker
 * has a cgroup folder, an O_PATH descriptor of the job cgroup the spare is
 * to be born in (CLONE_INTO_CGROUP); the server answers with two native 32-bit
 * words, the spare's pid (0: none was made) and an errno value (0: the
 * spare is ready), with the worker's end of the spare's own socket attached
 * (SCM_RIGHTS) when both are good. A pid with an error is a spare that died
 * before it was ready, for the worker to reap.
 *
 * Then, on that socket (the spare's descriptor 3): a header of
 * GUARD_HEAD_WORDS native 32-bit words (GUARD_MAGIC, the body's length, the
 * number of descriptors, argc, envc) sent with the descriptors attached
 * (SCM_RIGHTS: stdout, stderr, the report pipe, then the locks the command
 * keeps open), then the body: UID, GID, GROUPS, CWD, CGROUP ("." when the
 * spare was born in its cgroup, "-" without one) and CAP as on the guard's
 * command line, then the command's argc arguments and its envc
 * environment entries, each ending in a NUL byte.
 *
 * The report (a guard started for its job has it on descriptor 3): once
 * the command has ended and its output is copied, just before the guard
 * ends the way the command ended, it writes GUARD_REPORT_WORDS native
 * 64-bit words: GUARD_REPORT_MAGIC, then the bytes of stdout and of stderr
 * discarded past CAP. A guard that ends without writing it was killed (or
 * could not set the job up: exit 126 or 127, with a line on stderr). */
#ifndef GF_GUARD_REQUEST_H
#define GF_GUARD_REQUEST_H

#define GUARD_MAGIC 0x32474647u   /* "GFG2" */
#define GUARD_HEAD_WORDS 5
#define GUARD_MAX_FDS 80          /* stdout, stderr, report, 64 cards and the bench lock, with room */
#define GUARD_FIELDS 6            /* UID GID GROUPS CWD CGROUP CAP */
#define GUARD_REPORT_MAGIC 0x3154524f50524647ll   /* "GFRPRT1" */
#define GUARD_REPORT_WORDS 3
#define GUARD_MAX_BODY (1u << 30)

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Send buf[0..len) on sock with descriptor fd attached (SCM_RIGHTS; fd < 0:
 * none), again after EINTR. Returns what sendmsg returned. Both ends of
 * the fork server use it. */
static inline ssize_t guard_send_with_fd(int sock, const void *buf, size_t len, int fd)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct iovec iov = { (void *)buf, len };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (fd >= 0) {
        mh.msg_control = ctl.buf;
        mh.msg_controllen = sizeof ctl.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    ssize_t w;
    while ((w = sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    return w;
}

#endif
