/* pidfile.h — a pid file held by flock(2) for the life of a process: one
 * broker per run_dir, one worker per card. The lock, not the file's
 * existence, says whether the owner lives, so a stale file after a crash
 * never blocks a restart. */
#ifndef GF_PIDFILE_H
#define GF_PIDFILE_H

#include <sys/types.h>

/* Create path (and its folders, each new one 0711 whatever the umask:
 * traversable, not listable) if missing, lock it exclusively without
 * waiting and write our pid into it. The file gets exactly `mode` whatever
 * the umask (a file of an older gpuflock with more bits is tightened,
 * logged). `mode` decides who may open it, and so who may also flock it: a
 * user holding a shared lock on a worker's pid file would make the broker
 * believe a worker lives. Returns the descriptor, to
 * keep open (close-on-exec) while the process runs; -1 when another
 * process holds it (its pid, 0 if unreadable, in *holder); -2 after logging
 * an I/O error. */
int gf_pidfile_take(const char *path, mode_t mode, long *holder);

/* A pid file others may read (and so flock): a new file "<path>.new", mode
 * exactly `mode`, locked exclusively, our pid written, renamed over path.
 * A lock someone holds on an older file at path stays on that file: it can
 * neither stop us nor make readers believe we run. Exclusion among owners
 * is the business of a file only they can open (gf_pidfile_take with 0600).
 * The folder must be writable by us alone. Returns the descriptor to keep
 * open, or -1 after logging. */
int gf_pidfile_publish(const char *path, mode_t mode);

#endif
