/* request.h — how the worker gets a spare guard from the fork server
 * (`gpuflock-guard WORKER_PID --serve`) and hands it a job (worker/spare.c
 * to worker/guard/main.c).
 *
 * On the server's descriptor 3, a unix stream socket: each byte the worker
 * writes asks for one spare; the server answers with two native 32-bit
 * words, the spare's pid (0: none was made) and an errno value (0: the
 * spare is ready), with the worker's end of the spare's own socket attached
 * (SCM_RIGHTS) when both are good. A pid with an error is a spare that died
 * before it was ready, for the worker to reap.
 *
 * Then, on that socket (the spare's descriptor 3): a header of
 * GUARD_HEAD_WORDS native 32-bit words (GUARD_MAGIC, the body's length, the
 * number of descriptors, argc, envc) sent with the descriptors attached
 * (SCM_RIGHTS: stdout, stderr, then the locks the command keeps open), then
 * the body: UID, GID, GROUPS and CWD as on the guard's command line, then
 * the command's argc arguments and its envc environment entries, each
 * ending in a NUL byte. */
#ifndef GF_GUARD_REQUEST_H
#define GF_GUARD_REQUEST_H

#define GUARD_MAGIC 0x31474647u   /* "GFG1" */
#define GUARD_HEAD_WORDS 5
#define GUARD_MAX_FDS 80          /* stdout, stderr, 64 cards and the bench lock, with room */
#define GUARD_MAX_BODY (1u << 30)

#endif
