/* utf8.h — outside bytes made safe to quote in a message.
 *
 * Every string in a msgpack message is meant to be UTF-8, and strict
 * decoders (Python's msgpack, Rust's rmp-serde) refuse a reply otherwise.
 * Error replies and job reasons quote what a client or a worker sent (an
 * unknown key, an operation name, a path, a worker's message), and 431 of
 * 3,000 fuzzed replies carried invalid UTF-8 that way. Whatever builds such
 * a text passes the quoted bytes, or the whole text, through
 * gf_utf8_escape: valid UTF-8 stays as it is (so escaping twice changes
 * nothing), every other byte becomes the four characters \xNN.
 *
 * Valid is RFC 3629 / Unicode's table of well-formed sequences: no
 * overlong forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF,
 * no sequence cut short. */
#ifndef GF_UTF8_H
#define GF_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The length of the valid sequence at s[0..n) (n >= 1), or 0 when s[0]
 * does not begin one. */
size_t gf_utf8_seq_len(const unsigned char *s, size_t n);

/* Whether s[0..n) is valid UTF-8. NUL bytes are valid (U+0000). */
bool gf_utf8_valid(const char *s, size_t n);

/* Copy s[0..n) into dst (cap bytes, cap >= 1; always NUL-terminated),
 * each byte that is not part of a valid sequence written as \xNN (upper-case
 * hex), a NUL byte as \x00. What does not fit is left out at a character
 * boundary, never half a sequence or half an escape. Returns the number of
 * bytes of s taken (n when everything fit). */
size_t gf_utf8_escape(char *dst, size_t cap, const char *s, size_t n);

/* The escaped copy of the string s, whole (NULL gives NULL); the caller
 * frees. */
char *gf_utf8_escape_dup(const char *s);

#endif
