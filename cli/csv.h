/* csv.h — fields of `gpuflock history --csv` as RFC 4180 has them.
 *
 * A field is written as it is, unless it holds a comma, a double quote, a
 * CR or LF, any other control byte (below 0x20, and 0x7F), or begins or
 * ends with a space: then it is enclosed in double quotes and each double
 * quote inside is doubled. Nothing is dropped or replaced, so a reader that
 * follows RFC 4180 (Python's csv module, pandas, LibreOffice) gets every
 * byte of a job's name back, whatever its submitter put in it; a name can
 * never add a field or a record. Records end in CRLF, as RFC 4180 says. */
#ifndef GF_CSV_H
#define GF_CSV_H

#include <stdbool.h>
#include <stdio.h>

/* Does s need the quotes? */
bool gf_csv_needs_quotes(const char *s);

/* s as a field (quoted where it must be): a new string, the caller frees.
 * NULL is the empty field. */
char *gf_csv_field(const char *s);

/* Write s as a field to out, preceded by a comma unless first. */
void gf_csv_put(FILE *out, const char *s, bool first);

/* End the record (CRLF). */
void gf_csv_end(FILE *out);

#endif
