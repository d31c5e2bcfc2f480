/* fortify.c — glibc's checked printf family, for the static musl front.
 *
 * The front links libyaml and json-c from Debian's static archives, which
 * are built against glibc with _FORTIFY_SOURCE: their object code calls
 * glibc's __*_chk entry points, which musl does not have. These do what
 * glibc's do: the same work as the plain function, and abort where the
 * destination is smaller than the length given (glibc's "buffer overflow
 * detected"). Only the musl build links this file (Makefile, MUSL_CC). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

int __fprintf_chk(FILE *f, int flag, const char *fmt, ...) PRINTF_LIKE(3, 4);
int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap) PRINTF_LIKE(3, 0);
int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...) PRINTF_LIKE(4, 5);
int __snprintf_chk(char *s, size_t n, int flag, size_t slen, const char *fmt, ...)
    PRINTF_LIKE(5, 6);
int __vsnprintf_chk(char *s, size_t n, int flag, size_t slen, const char *fmt, va_list ap)
    PRINTF_LIKE(5, 0);
int __vasprintf_chk(char **out, int flag, const char *fmt, va_list ap) PRINTF_LIKE(3, 0);
char *__strcat_chk(char *dst, const char *src, size_t dlen);

int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
    (void)flag;
    return vfprintf(f, fmt, ap);
}

int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = __vfprintf_chk(f, flag, fmt, ap);
    va_end(ap);
    return n;
}

int __vsnprintf_chk(char *s, size_t n, int flag, size_t slen, const char *fmt, va_list ap)
{
    (void)flag;
    if (n > slen)
        abort();
    return vsnprintf(s, n, fmt, ap);
}

int __snprintf_chk(char *s, size_t n, int flag, size_t slen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vsnprintf_chk(s, n, flag, slen, fmt, ap);
    va_end(ap);
    return r;
}

int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...)
{
    (void)flag;
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(s, slen, fmt, ap);
    va_end(ap);
    if (r >= 0 && (size_t)r >= slen)
        abort();
    return r;
}

int __vasprintf_chk(char **out, int flag, const char *fmt, va_list ap)
{
    (void)flag;
    return vasprintf(out, fmt, ap);
}

char *__strcat_chk(char *dst, const char *src, size_t dlen)
{
    if (strlen(dst) + strlen(src) + 1 > dlen)
        abort();
    return strcat(dst, src);
}
