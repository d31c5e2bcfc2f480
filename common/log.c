/* log.c — the logging module (see log.h).
 *
 * Lines are formatted into one buffer and written with a single write(2),
 * so lines from several processes sharing a stderr or the log file do not
 * interleave: on a file opened O_APPEND each write lands whole at its end
 * (the kernel holds the file's lock for it). The settings are process-wide
 * and written only by main() (start-up, and the log file's reopening, which
 * its loop does).
 *
 * The log file. Its descriptor number never changes once it is open: a
 * reopen opens the new file and dup2()s it onto that number, which the
 * kernel does in one step, so a thread writing meanwhile writes its whole
 * line to the old file or to the new one, never to a closed descriptor.
 * A line that cannot be written there (a full disk) still reaches stderr;
 * the file says how many it missed once it can be written again. */
#include "common/log.h"
#include "common/error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_BYTES 2048
#define LOG_FILE_MODE  0640

static gf_log_level log_threshold = GF_LOG_INFO;
static char log_prog[32] = "gpuflock";
/* "gpuflock exec": lines in the user's form; "": event lines */
static char log_user[64];
/* per thread, so concurrent jobs of one worker each keep their own */
static _Thread_local char last_error[512];

/* the log file, where one is set (gf_log_open_file); its path is written by
 * main's thread only, the descriptor read by every thread */
static char file_path[PATH_MAX];
static atomic_int file_fd = -1;
static atomic_ulong file_lost;      /* lines the file missed since it last took one */
static atomic_int file_errno;       /* why the last write failed, 0: it worked */
static atomic_bool file_torn;       /* a write stopped mid-line: the next starts a line */
static bool reopen_failing;         /* the last reopen failed (said once; main's thread) */

const char *gf_log_last_error(void)
{
    return last_error;
}

void gf_log_clear_last_error(void)
{
    last_error[0] = 0;
}

void gf_log_init(const char *prog, gf_log_level level)
{
    if (prog) {
        const char *slash = strrchr(prog, '/');
        snprintf(log_prog, sizeof log_prog, "%s", slash ? slash + 1 : prog);
    }
    log_threshold = level;
}

void gf_log_set_user(const char *who)
{
    snprintf(log_user, sizeof log_user, "%s", who ? who : "");
}

gf_log_level gf_log_get_level(void)
{
    return log_threshold;
}

int gf_log_level_parse(const char *name, gf_log_level *out)
{
    static const char *names[] = { "debug", "info", "warn", "error", "off" };
    for (int i = 0; i <= GF_LOG_OFF; i++) {
        if (strcasecmp(name, names[i]) == 0) {
            *out = (gf_log_level)i;
            return 0;
        }
    }
    return GF_EINVAL;
}

/* A message goes on one line: a control character in it (a newline in a
 * path or in text a peer sent) is written \xNN, so that no message can
 * make a line that looks like another event. Returns the new length. */
static size_t one_line(char *dst, size_t cap, const char *src, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)src[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            if (o + 4 >= cap)
                break;
            o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", c);
        } else {
            dst[o++] = (char)c;
        }
    }
    return o;
}

/* The two prefixes of an event line: stderr's time of day (the journal
 * keeps the date), the file's full local date and time with its offset. */
static void event_prefixes(gf_log_level level, char *err, size_t elen, char *file, size_t flen)
{
    static const char *tags[] = { "debug", "info", "warn", "error" };
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    if (err)
        snprintf(err, elen, "%02d:%02d:%02d.%03ld %s[%d] %s: ", tm.tm_hour, tm.tm_min,
                 tm.tm_sec, ts.tv_nsec / 1000000, log_prog, (int)getpid(), tags[level]);
    if (!file)
        return;
    char date[32], zone[8];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(zone, sizeof zone, "%z", &tm);
    snprintf(file, flen, "%s.%03ld%s %s[%d] %s: ", date, ts.tv_nsec / 1000000, zone, log_prog,
             (int)getpid(), tags[level]);
}

static void write_stderr(const char *prefix, const char *body, size_t len)
{
    struct iovec iov[2] = { { (void *)prefix, strlen(prefix) }, { (void *)body, len } };
    ssize_t w = writev(STDERR_FILENO, iov, 2);
    (void)w;
}

/* A line about the log file itself, on stderr only (the file is what fails). */
static void say_on_stderr(gf_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void say_on_stderr(gf_log_level level, const char *fmt, ...)
{
    if (level < log_threshold)
        return;
    char prefix[128], body[LINE_MAX_BYTES];
    event_prefixes(level, prefix, sizeof prefix, NULL, 0);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(body, sizeof body - 1, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n > sizeof body - 2 ? sizeof body - 2 : (size_t)n;
    body[len++] = '\n';
    write_stderr(prefix, body, len);
}

/* One whole line into the file; a failure is counted, said once on stderr,
 * and the line is left out (the process goes on: a full disk stops no one). */
static void write_file(int fd, const char *prefix, const char *body, size_t len)
{
    bool torn = atomic_exchange(&file_torn, false);
    struct iovec iov[3] = { { "\n", torn ? 1 : 0 }, { (void *)prefix, strlen(prefix) },
                            { (void *)body, len } };
    size_t want = iov[0].iov_len + iov[1].iov_len + iov[2].iov_len;
    ssize_t w = writev(fd, iov, 3);
    if (w == (ssize_t)want) {
        unsigned long lost = atomic_exchange(&file_lost, 0);
        int was = atomic_exchange(&file_errno, 0);
        if (lost) {
            char text[PATH_MAX + 160], pre[160];
            int n = snprintf(text, sizeof text,
                             "log file %s: %lu line%s could not be written to it (%s); they "
                             "went to stderr only\n", file_path, lost, lost == 1 ? "" : "s",
                             strerror(was ? was : EIO));
            event_prefixes(GF_LOG_WARN, NULL, 0, pre, sizeof pre);
            size_t tl = n < 0 ? 0 : (size_t)n >= sizeof text ? sizeof text - 1 : (size_t)n;
            struct iovec again[2] = { { pre, strlen(pre) }, { text, tl } };
            ssize_t w2 = writev(fd, again, 2);
            (void)w2;
        }
        return;
    }
    int err = w < 0 ? errno : ENOSPC;   /* a short write: the disk filled during it */
    if (w > (ssize_t)iov[0].iov_len)
        atomic_store(&file_torn, true);  /* part of the line is there: end it first */
    else if (torn)
        atomic_store(&file_torn, true);
    atomic_fetch_add(&file_lost, 1);
    if (atomic_exchange(&file_errno, err) == 0)
        say_on_stderr(GF_LOG_WARN, "log file %s: cannot write it: %s; lines go to stderr only "
                      "until it can be written again", file_path, strerror(err));
}

void gf_vlog(gf_log_level level, const char *fmt, va_list ap)
{
    static const char *user_tags[] = { "debug: ", "info: ", "warning: ", "" };
    if (level == GF_LOG_ERROR) {
        va_list cp;
        va_copy(cp, ap);
        vsnprintf(last_error, sizeof last_error, fmt, cp);
        va_end(cp);
    }
    if (level < log_threshold || level >= GF_LOG_OFF)
        return;
    char text[LINE_MAX_BYTES];
    int m = vsnprintf(text, sizeof text, fmt, ap);
    size_t n = m < 0 ? 0 : (size_t)m >= sizeof text ? sizeof text - 1 : (size_t)m;
    while (n > 0 && text[n - 1] == '\n')
        n--;
    if (log_user[0]) {
        /* the user's form: what a command says, as it said it */
        char prefix[96];
        snprintf(prefix, sizeof prefix, "%s: %s", log_user, user_tags[level]);
        if (n > sizeof text - 2)
            n = sizeof text - 2;
        text[n++] = '\n';
        write_stderr(prefix, text, n);
        return;
    }
    char line[LINE_MAX_BYTES];
    size_t len = one_line(line, sizeof line - 1, text, n);
    line[len++] = '\n';
    int fd = atomic_load(&file_fd);
    char eprefix[128], fprefix[160];
    event_prefixes(level, eprefix, sizeof eprefix, fd >= 0 ? fprefix : NULL, sizeof fprefix);
    write_stderr(eprefix, line, len);
    if (fd >= 0)
        write_file(fd, fprefix, line, len);
}

void gf_log(gf_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gf_vlog(level, fmt, ap);
    va_end(ap);
}

/* ---- the log file ------------------------------------------------------ */

/* Why the log file cannot be had, into why[len]. */
static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

/* Whom a folder on the way may belong to: root or this program's user. */
static bool trusted_owner(uid_t uid)
{
    return uid == 0 || uid == geteuid();
}

/* The folder must name itself (no symlink on the way) and nobody but root
 * and this program's user may change what it holds: each folder above it
 * is theirs and, unless sticky, not writable by others; the folder itself
 * is theirs and writable by its owner alone. Made (0750) when missing,
 * its parent checked as above. 0, or a code with *why set. */
static int check_folder(const char *dir, char *why, size_t len)
{
    struct stat st;
    if (lstat(dir, &st) != 0 && errno == ENOENT) {
        if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
            say(why, len, "cannot make its folder %s: %s", dir, strerror(errno));
            return errno == ENOSPC || errno == EDQUOT ? GF_ENOSPC : GF_EIO;
        }
    }
    char real[PATH_MAX];
    if (!realpath(dir, real)) {
        say(why, len, "its folder %s: %s", dir, strerror(errno));
        return GF_EIO;
    }
    if (strcmp(real, dir) != 0) {
        say(why, len, "its folder %s is not canonical: it resolves to %s (write that)", dir,
                 real);
        return GF_EPERM;
    }
    char part[PATH_MAX];
    snprintf(part, sizeof part, "%s", dir);
    for (bool self = true;; self = false) {
        if (lstat(part, &st) != 0) {
            say(why, len, "%s: %s", part, strerror(errno));
            return GF_EIO;
        }
        if (!S_ISDIR(st.st_mode)) {
            say(why, len, "%s is not a folder", part);
            return GF_EPERM;
        }
        if (!trusted_owner(st.st_uid)) {
            say(why, len, "%s belongs to uid %u, neither root nor this program's user: it "
                     "could move or replace the log file", part, (unsigned)st.st_uid);
            return GF_EPERM;
        }
        if (self && (st.st_mode & 022)) {
            say(why, len, "its folder %s is writable by %s (mode %04o): another user could "
                     "put a link or a file of theirs at its name; give the log a folder of its "
                     "own that only its owner writes (e.g. /var/log/gpuflock, 0750)", part,
                     (st.st_mode & 002) ? "others" : "its group", (unsigned)(st.st_mode & 07777));
            return GF_EPERM;
        }
        if (!self && (st.st_mode & 002) && !(st.st_mode & S_ISVTX)) {
            say(why, len, "%s, above its folder, is writable by others and not sticky "
                     "(mode %04o): another user could replace the folder", part,
                     (unsigned)(st.st_mode & 07777));
            return GF_EPERM;
        }
        if (!strcmp(part, "/"))
            return 0;
        char *slash = strrchr(part, '/');
        slash[slash == part ? 1 : 0] = '\0';
    }
}

/* Open (or make, LOG_FILE_MODE) the log file at path for appending, as the
 * header says: 0 and *fd, or a code with *why set. */
static int open_checked(const char *path, int *fd_out, char *why, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (path[0] != '/' || !slash || !slash[1]) {
        say(why, len, "not an absolute path of a file");
        return GF_EINVAL;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    int rc = check_folder(dir, why, len);
    if (rc)
        return rc;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dfd < 0) {
        say(why, len, "its folder %s: %s", dir, strerror(errno));
        return GF_EIO;
    }
    struct stat st;
    /* the folder as opened: the same rules, on what was opened */
    if (fstat(dfd, &st) != 0 || !trusted_owner(st.st_uid) || (st.st_mode & 022)) {
        say(why, len, "its folder %s changed while it was checked", dir);
        close(dfd);
        return GF_EPERM;
    }
    /* O_NOFOLLOW: a symlink planted at the name is refused, not followed;
     * O_NONBLOCK: a FIFO there does not hang the open (refused below) */
    int fd = openat(dfd, slash + 1,
                    O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                    LOG_FILE_MODE);
    int err = errno;
    close(dfd);
    if (fd < 0) {
        if (err == ELOOP)
            say(why, len, "is a symbolic link: refused (it is never followed)");
        else if (err == ENXIO || err == EISDIR)
            say(why, len, "is not a regular file (%s): refused",
                err == ENXIO ? "a FIFO or a socket" : "a folder");
        else
            say(why, len, "%s", strerror(err));
        bool refused = err == ELOOP || err == ENXIO || err == EISDIR || err == EACCES ||
                       err == EPERM;
        return refused ? GF_EPERM : err == ENOSPC || err == EDQUOT ? GF_ENOSPC : GF_EIO;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        say(why, len, "is not a regular file: refused");
        close(fd);
        return GF_EPERM;
    }
    if (st.st_uid != geteuid()) {
        say(why, len, "belongs to uid %u, not to this program's user (uid %u): refused",
                 (unsigned)st.st_uid, (unsigned)geteuid());
        close(fd);
        return GF_EPERM;
    }
    if (st.st_nlink != 1) {
        say(why, len, "has %lu hard links (another name for it could be another file's): "
                 "refused", (unsigned long)st.st_nlink);
        close(fd);
        return GF_EPERM;
    }
    mode_t have = st.st_mode & 07777, want = have & LOG_FILE_MODE;
    if (want != have) {
        if (fchmod(fd, want) != 0) {
            say(why, len, "cannot set its mode %04o (it has %04o): %s", (unsigned)want,
                     (unsigned)have, strerror(errno));
            close(fd);
            return GF_EPERM;
        }
        say_on_stderr(GF_LOG_WARN, "log file %s: mode %04o tightened to %04o", path,
                      (unsigned)have, (unsigned)want);
    }
    *fd_out = fd;
    return 0;
}

/* The new file onto the descriptor number in use (or as the first one). */
static void install(int fd)
{
    int cur = atomic_load(&file_fd);
    if (cur < 0) {
        atomic_store(&file_fd, fd);
        return;
    }
    if (dup3(fd, cur, O_CLOEXEC) < 0)
        say_on_stderr(GF_LOG_WARN, "log file %s: dup3: %s: lines go on to the old file",
                      file_path, strerror(errno));
    close(fd);
}

int gf_log_open_file(const char *path)
{
    if (!path || !*path)
        return 0;
    if (strlen(path) >= sizeof file_path) {
        GF_ERROR("log_file %s: path too long", path);
        return GF_EINVAL;
    }
    char why[640];
    int fd = -1;
    int rc = open_checked(path, &fd, why, sizeof why);
    if (rc == GF_ENOSPC) {
        snprintf(file_path, sizeof file_path, "%s", path);   /* tried again by gf_log_check_file */
        GF_WARN("log_file %s: %s: lines go to stderr only until it can be made", path, why);
        return rc;
    }
    if (rc) {
        GF_ERROR("log_file %s: %s", path, why);
        return rc;
    }
    snprintf(file_path, sizeof file_path, "%s", path);
    install(fd);
    return 0;
}

const char *gf_log_file_path(void)
{
    return file_path[0] ? file_path : NULL;
}

int gf_log_reopen(void)
{
    if (!file_path[0])
        return 0;
    char why[640];
    int fd = -1;
    int rc = open_checked(file_path, &fd, why, sizeof why);
    if (rc) {
        bool open = atomic_load(&file_fd) >= 0;
        if (!reopen_failing)   /* tried again each heartbeat: said once */
            GF_WARN("log file %s: cannot reopen it: %s; %s, trying again", file_path, why,
                    open ? "lines go on to the file as it was" : "lines go to stderr only");
        reopen_failing = true;
        return rc;
    }
    install(fd);
    reopen_failing = false;
    GF_INFO("log file %s reopened", file_path);
    return 0;
}

int gf_log_check_file(void)
{
    if (!file_path[0])
        return 0;
    int fd = atomic_load(&file_fd);
    struct stat now, have;
    if (fd >= 0 && lstat(file_path, &now) == 0 && fstat(fd, &have) == 0 &&
        now.st_dev == have.st_dev && now.st_ino == have.st_ino)
        return 0;
    return gf_log_reopen();
}

void gf_log_close_file(void)
{
    int fd = atomic_exchange(&file_fd, -1);
    if (fd >= 0)
        close(fd);
    file_path[0] = '\0';
    reopen_failing = false;
    atomic_store(&file_lost, 0);
    atomic_store(&file_errno, 0);
    atomic_store(&file_torn, false);
}
