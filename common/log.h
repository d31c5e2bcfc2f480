/* log.h — one line per event on stderr, with a level and the program name.
 *
 * The level threshold, the program name and the line style are process
 * settings made once by main() (gf_log_init, gf_log_set_user); library code
 * only calls the GF_LOG_* macros. Formats are checked by the compiler.
 *
 * Two styles: event lines for the daemons ("12:00:01.250 gpuflockd[41] error:
 * ..."), and, once a command line sets its user's name for itself, the lines
 * a user reads from a command ("gpuflock exec: card 5 is not configured"), so
 * that what library code logs on the command's behalf reads like the
 * command's own messages. */
#ifndef GF_LOG_H
#define GF_LOG_H

#include <stdarg.h>

typedef enum {
    GF_LOG_DEBUG = 0,
    GF_LOG_INFO  = 1,
    GF_LOG_WARN  = 2,
    GF_LOG_ERROR = 3,
    GF_LOG_OFF   = 4,
} gf_log_level;

/* Set the program name shown in each line and the lowest level printed. */
void gf_log_init(const char *prog, gf_log_level level);

/* From now on, write lines for the user of a command named who ("gpuflock
 * exec"): "<who>: message" for errors, "<who>: warning: message" for
 * warnings, "<who>: info: " and "<who>: debug: " below; no time, pid or
 * level tag. NULL: event lines again. The name is copied. */
void gf_log_set_user(const char *who);

/* Parse "debug", "info", "warn", "error", "off"; returns 0 or GF_EINVAL. */
int gf_log_level_parse(const char *name, gf_log_level *out);

/* The current threshold (GF_LOG_OFF silences everything). */
gf_log_level gf_log_get_level(void);

/* Print one line: "<time> <prog>[pid] LEVEL: message\n", or the user's
 * form (gf_log_set_user). */
void gf_log(gf_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gf_vlog(gf_log_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* The message of the calling thread's last GF_ERROR (whatever the
 * threshold), "" when there was none since gf_log_clear_last_error.
 * Thread-local and borrowed: a worker thread running a job reports why the
 * job failed with the error its library code logged. */
const char *gf_log_last_error(void);
void gf_log_clear_last_error(void);

#define GF_DEBUG(...) gf_log(GF_LOG_DEBUG, __VA_ARGS__)
#define GF_INFO(...)  gf_log(GF_LOG_INFO, __VA_ARGS__)
#define GF_WARN(...)  gf_log(GF_LOG_WARN, __VA_ARGS__)
#define GF_ERROR(...) gf_log(GF_LOG_ERROR, __VA_ARGS__)

#endif
