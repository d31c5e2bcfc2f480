/* log.c — the logging module (see log.h).
 *
 * Lines are formatted into one buffer and written with a single write(2), so
 * lines from several processes sharing a stderr do not interleave. The
 * settings are process-wide and written only by main() at start-up. */
#include "common/log.h"
#include "common/error.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static gf_log_level log_threshold = GF_LOG_INFO;
static char log_prog[32] = "gpuflock";
/* "gpuflock exec": lines in the user's form; "": event lines */
static char log_user[64];
/* per thread, so concurrent jobs of one worker each keep their own */
static _Thread_local char last_error[512];

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

void gf_vlog(gf_log_level level, const char *fmt, va_list ap)
{
    static const char *tags[] = { "debug", "info", "warn", "error" };
    static const char *user_tags[] = { "debug: ", "info: ", "warning: ", "" };
    if (level == GF_LOG_ERROR) {
        va_list cp;
        va_copy(cp, ap);
        vsnprintf(last_error, sizeof last_error, fmt, cp);
        va_end(cp);
    }
    if (level < log_threshold || level >= GF_LOG_OFF)
        return;
    char line[2048];
    int n;
    if (log_user[0]) {
        n = snprintf(line, sizeof line, "%s: %s", log_user, user_tags[level]);
    } else {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        localtime_r(&ts.tv_sec, &tm);
        n = snprintf(line, sizeof line, "%02d:%02d:%02d.%03ld %s[%d] %s: ",
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
                     log_prog, (int)getpid(), tags[level]);
    }
    if (n < 0)
        return;
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;   /* truncated: keep the newline */
    while (len > 0 && line[len - 1] == '\n')
        len--;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void gf_log(gf_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gf_vlog(level, fmt, ap);
    va_end(ap);
}
