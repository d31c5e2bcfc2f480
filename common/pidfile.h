/* pidfile.h — a pid file held by flock(2) for the life of a process: one
 * broker per run_dir, one worker per card. The lock, not the file's
 * existence, says whether the owner lives, so a stale file after a crash
 * never blocks a restart. */
#ifndef GF_PIDFILE_H
#define GF_PIDFILE_H

/* Create path (and its folder) if missing, lock it exclusively without
 * waiting and write our pid into it. Returns the descriptor, to keep open
 * (close-on-exec) while the process runs; -1 when another process holds it
 * (its pid, 0 if unreadable, in *holder); -2 after logging an I/O error. */
int gf_pidfile_take(const char *path, long *holder);

#endif
