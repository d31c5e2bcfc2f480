/* proto_table.h — the codec's tables, shared by its three files and by
 * nobody else: proto.c (the tables, and the records' defaults, copies and
 * destruction), proto_encode.c and proto_decode.c. One table per operation
 * and per nested record drives all of them, so they cannot disagree. */
#ifndef GF_PROTO_TABLE_H
#define GF_PROTO_TABLE_H

#include "net/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    F_STR,      /* char *, NULL travels as nil when optional */
    F_CHARS,    /* char[limit + 1] inside the record */
    F_BOOL,
    F_I32, F_I64, F_U32, F_U64,
    F_F64,      /* double, finite; travels as a float (an integer is taken too) */
    F_SIZE,     /* size_t, travels as an unsigned integer */
    F_ENUM,     /* int-sized enum, travels as one of names[] */
    F_STRV,     /* char ** + size_t count */
    F_U64V,     /* uint64_t * + count */
    F_I32V,     /* int32_t * + count */
    F_U32V,     /* uint32_t * + count */
    F_BIN,      /* uint8_t * + size_t length */
    F_STRUCT,   /* nested record inside this one */
    F_STRUCTV,  /* pointer to an array of records + count */
    F_STATS,    /* gf_stat * + count: a map of name → integer or float */
    F_OPTREC,   /* pointer to one nested record, NULL: the key is left out */
} ftype;

typedef struct field {
    const char *key;
    ftype type;
    bool required;
    size_t off;                 /* offset of the value (or pointer) */
    size_t count_off;           /* vectors: offset of the size_t count */
    size_t limit;               /* string bytes, or element count */
    size_t slimit;              /* F_STRV: bytes per string */
    size_t elem_size;           /* F_STRUCTV: sizeof one record */
    const struct field *sub;    /* F_STRUCT(V): the record's table */
    const char *const *names;   /* F_ENUM: value names, NULL-terminated */
    int64_t def;                /* numbers: value when the key is absent */
    bool omit;                  /* encoder leaves the key out while it holds
                                 * its default (0/def, false, NULL): keys added
                                 * after version 1 (see proto.h) */
} field;

#define AT(st, m) offsetof(st, m)
#define END { NULL, 0, false, 0, 0, 0, 0, 0, NULL, NULL, 0, false }

typedef struct {
    const char *name;
    const field *fields;
} op_desc;

/* Every operation's name and fields, by gf_op. */
extern const op_desc gf_proto_ops[GF_OP_COUNT_];

#define PTR(base, off, T) ((T *)((char *)(base) + (off)))
#define CPTR(base, off, T) ((const T *)((const char *)(base) + (off)))

/* Names in a NULL-terminated enum name table. */
size_t gf_proto_enum_count(const char *const *names);
/* Every field of a record at its default (0/def, false, NULL). */
void gf_proto_set_defaults(const field *fs, void *base);

#endif
