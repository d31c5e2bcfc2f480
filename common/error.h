/* error.h — gpuflock's error codes.
 *
 * Functions that can fail because of something outside the program (a file,
 * the network, YAML, audio, weights, the GPU) return 0 on success or one of
 * these negative codes, libuv style, after logging a message that names the
 * thing and what is wrong with it. gf_strerror() names a code. */
#ifndef GF_ERROR_H
#define GF_ERROR_H

enum {
    GF_OK        = 0,
    GF_EINVAL    = -1,   /* bad argument or malformed input */
    GF_EIO       = -2,   /* read/write/system call failed */
    GF_ENOENT    = -3,   /* file, job, device or key not found */
    GF_EBUSY     = -4,   /* lock held elsewhere (non-blocking try) */
    GF_ETIMEDOUT = -5,   /* a wait ran past its deadline */
    GF_ECONFIG   = -6,   /* configuration error (exit status 78) */
    GF_EPROTO    = -7,   /* protocol: malformed, wrong version, unknown op */
    GF_ETOOBIG   = -8,   /* oversize string, array or frame */
    GF_EPERM     = -9,   /* not allowed for this user */
    GF_EUNSUP    = -10,  /* valid but unsupported (format, geometry, device) */
    GF_EDEVICE   = -11,  /* GPU / driver error */
    GF_EINTR     = -12,  /* interrupted by a signal */
    GF_ESTATE    = -13,  /* operation not valid in the object's state */
    GF_ENOSPC    = -14,  /* no space left: a disk is full (exit status 74 in the CLI) */
    GF_EEXIST    = -15,  /* a file exists and was not replaced (never on the wire) */
};

/* Short name for an error code ("invalid input", ...); never NULL. */
const char *gf_strerror(int code);

/* Return the error code of x from the enclosing function when it is not 0. */
#define GF_TRY(x)           \
    do {                    \
        int gf_try_rc_ = (x); \
        if (gf_try_rc_)     \
            return gf_try_rc_; \
    } while (0)

/* Exit statuses shared by the programs (sysexits.h numbering). */
enum {
    GF_EXIT_USAGE   = 64,   /* command line usage error */
    GF_EXIT_DATAERR = 65,   /* bad input data */
    GF_EXIT_NOINPUT = 66,   /* input file missing or unreadable */
    GF_EXIT_UNAVAIL = 69,   /* service (broker) unavailable */
    GF_EXIT_SOFTWARE = 70,  /* internal error */
    GF_EXIT_IOERR   = 74,   /* the broker cannot record a change: its job store's disk is full */
    GF_EXIT_TEMPFAIL = 75,  /* timed out waiting (e.g. for a lock) */
    GF_EXIT_CONFIG  = 78,   /* configuration error */
};

#endif
