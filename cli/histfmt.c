/* histfmt.c — the accounting forms of `gpuflock history` (see histfmt.h). */
#include "cli/histfmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void gf_hist_time(int64_t ms, char *buf, size_t len)
{
    if (ms <= 0) {
        snprintf(buf, len, "-");
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

void gf_hist_iso(int64_t ms, char *buf, size_t len)
{
    if (ms <= 0 || len < 26) {
        if (len)
            buf[0] = '\0';
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    char z[8];
    strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(z, sizeof z, "%z", &tm);          /* +0100 */
    size_t l = strlen(buf);
    if (strlen(z) == 5)
        snprintf(buf + l, len - l, "%.3s:%.2s", z, z + 3);
}

void gf_hist_elapsed(int64_t ms, char *buf, size_t len)
{
    if (ms < 0) {
        snprintf(buf, len, "-");
        return;
    }
    long long s = (long long)(ms / 1000), d = s / 86400;
    s %= 86400;
    if (d)
        snprintf(buf, len, "%lld-%02lld:%02lld:%02lld", d, s / 3600, s % 3600 / 60, s % 60);
    else
        snprintf(buf, len, "%02lld:%02lld:%02lld", s / 3600, s % 3600 / 60, s % 60);
}

void gf_hist_rss(int64_t kb, char *buf, size_t len)
{
    if (kb <= 0)
        snprintf(buf, len, "-");
    else if (kb < 1024)
        snprintf(buf, len, "%lldK", (long long)kb);
    else if (kb < 1024 * 1024)
        snprintf(buf, len, "%.1fM", (double)kb / 1024.0);
    else
        snprintf(buf, len, "%.1fG", (double)kb / (1024.0 * 1024.0));
}

void gf_hist_exit(const gf_job *j, char *buf, size_t len)
{
    if (j->exit_status < 0 && j->term_signal <= 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%d:%d", j->exit_status < 0 ? 0 : j->exit_status,
                 j->term_signal > 0 ? j->term_signal : 0);
}

void gf_hist_text(const char *s, char *buf, size_t len)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < len; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (len)
        buf[i] = '\0';
}

int64_t gf_hist_elapsed_ms(const gf_job *j, int64_t now_ms)
{
    if (j->started_ms <= 0)
        return -1;
    int64_t end = j->ended_ms > 0 ? j->ended_ms : now_ms;
    return end > j->started_ms ? end - j->started_ms : 0;
}
