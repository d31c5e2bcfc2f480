/* error.c — names for gpuflock's error codes (see error.h). */
#include "common/error.h"

const char *gf_strerror(int code)
{
    switch (code) {
    case GF_OK:        return "ok";
    case GF_EINVAL:    return "invalid input";
    case GF_EIO:       return "input/output error";
    case GF_ENOENT:    return "not found";
    case GF_EBUSY:     return "busy";
    case GF_ETIMEDOUT: return "timed out";
    case GF_ECONFIG:   return "configuration error";
    case GF_EPROTO:    return "protocol error";
    case GF_ETOOBIG:   return "too big";
    case GF_EPERM:     return "not permitted";
    case GF_EUNSUP:    return "unsupported";
    case GF_EDEVICE:   return "device error";
    case GF_EINTR:     return "interrupted";
    case GF_ESTATE:    return "wrong state";
    case GF_ENOSPC:    return "no space left";
    case GF_EEXIST:    return "exists: not replaced";
    default:           return "unknown error";
    }
}
