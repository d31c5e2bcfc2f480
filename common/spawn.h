/* spawn.h — run a command in its own process group, pass signals on, wait.
 *
 * The command gets a new process group, so a signal passed on reaches every
 * process of it (a shell script's children too) and none of ours. While it
 * runs, SIGINT, SIGTERM and SIGHUP sent to us are passed to its group (one
 * we inherited as ignored, as under nohup, stays ignored for both). When
 * we run in the foreground of a terminal, the command's group gets the
 * terminal (so it can read it, and ^C / ^Z reach it directly), and a
 * command stopped by ^Z stops us too and resumes with us, as a shell would.
 * Descriptors without close-on-exec (a card lock) are inherited. */
#ifndef GF_SPAWN_H
#define GF_SPAWN_H

/* Run argv[0] (searched in PATH) with envp (NULL: our environment) and wait
 * for it. *status gets the shell's convention: the command's exit status,
 * 128+N if signal N killed it, 127 when it could not be found and 126 when
 * it could not be run (both logged with the reason). Returns 0, or GF_EIO
 * when no process could be started. Sets SIGCHLD to its default action. */
int gf_spawn_run(char *const argv[], char *const envp[], int *status);

#endif
