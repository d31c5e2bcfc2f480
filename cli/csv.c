/* csv.c — RFC 4180 fields (see csv.h). */
#include "cli/csv.h"

#include "common/util.h"

#include <stdlib.h>
#include <string.h>

bool gf_csv_needs_quotes(const char *s)
{
    if (!s || !*s)
        return false;
    size_t n = strlen(s);
    if (s[0] == ' ' || s[n - 1] == ' ')
        return true;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p == ',' || *p == '"' || *p < 0x20 || *p == 0x7f)
            return true;
    return false;
}

char *gf_csv_field(const char *s)
{
    if (!s)
        return gf_strdup("");
    if (!gf_csv_needs_quotes(s))
        return gf_strdup(s);
    size_t n = strlen(s), q = 0;
    for (size_t i = 0; i < n; i++)
        q += s[i] == '"';
    char *out = gf_malloc(n + q + 3), *o = out;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            *o++ = '"';
        *o++ = s[i];
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

void gf_csv_put(FILE *out, const char *s, bool first)
{
    char *f = gf_csv_field(s);
    fprintf(out, "%s%s", first ? "" : ",", f);
    free(f);
}

void gf_csv_end(FILE *out)
{
    fputs("\r\n", out);
}
