/* tmpdir.h — a fresh folder for a test case, and its removal with all it
 * holds: one place for the fixtures of the tests that need real files. */
#ifndef GF_TEST_TMPDIR_H
#define GF_TEST_TMPDIR_H

#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>

/* A new folder "<$TMPDIR or /tmp>/<prefix>-XXXXXX" into dir: 0, or -1. */
static inline int gf_test_mkdtemp(char *dir, size_t len, const char *prefix)
{
    const char *base = getenv("TMPDIR");
    int n = snprintf(dir, len, "%s/%s-XXXXXX", base && *base ? base : "/tmp", prefix);
    return n > 0 && (size_t)n < len && mkdtemp(dir) ? 0 : -1;
}

/* Remove dir and everything in it: 0, or -1. */
static inline int gf_test_rmtree(const char *dir)
{
    char *cmd = gf_strfmt("rm -rf '%s'", dir);
    int rc = system(cmd);
    free(cmd);
    return rc == 0 ? 0 : -1;
}

#endif
