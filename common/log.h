/* log.h — one line per event on stderr (and in the log file, where one is
 * set), with a level and the program name.
 *
 * The level threshold, the program name and the line style are process
 * settings made once by main() (gf_log_init, gf_log_set_user); library code
 * only calls the GF_LOG_* macros. Formats are checked by the compiler.
 *
 * Two styles: event lines for the daemons ("12:00:01.250 gpuflockd[41] error:
 * ..."), and, once a command line sets its user's name for itself, the lines
 * a user reads from a command ("gpuflock exec: card 5 is not configured"), so
 * that what library code logs on the command's behalf reads like the
 * command's own messages.
 *
 * Event lines are one line each whatever the message holds (a control
 * character in it is written \xNN). With a log file (log_file, the daemons)
 * each event line goes to stderr and, with the full date, to the file. */
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

/* Append every event line to the file at path too (the configuration's
 * log_file), made 0640 when missing. It is opened O_APPEND, O_NOFOLLOW,
 * O_CLOEXEC from its folder, which must name itself (no symlink on the way),
 * belong to root or this program's user and be writable by its owner alone
 * (each folder above it not writable by others unless sticky); a symlink,
 * a hard-linked file, a file of another user or anything but a regular file
 * at the name is refused, never followed. A missing folder is made 0750.
 * Returns 0 (NULL or "": no file), GF_EPERM / GF_EIO / GF_EINVAL after
 * logging why (the daemons stop then), or GF_ENOSPC: the disk is full, the
 * lines go to stderr meanwhile and gf_log_check_file tries again. Called by
 * main before any thread starts. */
int gf_log_open_file(const char *path);

/* The log file's path, or NULL when there is none. */
const char *gf_log_file_path(void);

/* Open the log file again by its path (SIGHUP after a rotation): lines
 * written after the call go to the file now at the path, those before
 * went to the old one, none lost or cut in two (the descriptor is swapped
 * in one step). A reopen that fails keeps the old file (logged). 0 or
 * the code of the open. Main's thread only. */
int gf_log_reopen(void);

/* Reopen when the file at the path is not the one written to (moved or
 * removed by a rotation nobody signalled), or when none could be opened
 * yet: a stat and an fstat otherwise. For the daemons' loops, about once
 * a second. 0 or the code of the reopen. */
int gf_log_check_file(void);

/* Stop writing to the log file (tests; nothing else needs it). */
void gf_log_close_file(void);

#define GF_DEBUG(...) gf_log(GF_LOG_DEBUG, __VA_ARGS__)
#define GF_INFO(...)  gf_log(GF_LOG_INFO, __VA_ARGS__)
#define GF_WARN(...)  gf_log(GF_LOG_WARN, __VA_ARGS__)
#define GF_ERROR(...) gf_log(GF_LOG_ERROR, __VA_ARGS__)

#endif
