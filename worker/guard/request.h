/* request.h — how the worker hands a job to a guard started ahead
 * (`gpuflock-guard WORKER_PID --wait`, worker/spare.c to worker/guard/main.c).
 *
 * On the guard's descriptor 3, a unix stream socket: a header of
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
