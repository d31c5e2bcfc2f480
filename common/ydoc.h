/* ydoc.h — a YAML text loaded as one libyaml document within bounds, and the
 * small reader that walks it: nodes with their lines, and mappings walked
 * against a table of the keys they allow.
 *
 * The configuration (common/config.c) and the evidence tables
 * (route/evidence_tables.c) read their YAML through this one reader; each words
 * its own messages (the configuration stops at the first problem, the
 * evidence validator collects every one), so the reader reports what it
 * found and formats nothing. */
#ifndef GF_YDOC_H
#define GF_YDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

typedef enum {
    GF_YDOC_OK = 0,
    GF_YDOC_NO_PARSER = 1,     /* libyaml could not start a parser */
    GF_YDOC_TOO_BIG = 2,       /* more bytes than the bound */
    GF_YDOC_TOO_DEEP = 3,      /* nesting deeper than the bound, at line */
    GF_YDOC_SYNTAX = 4,        /* libyaml's problem (and context), at line */
    GF_YDOC_SECOND_DOC = 5,    /* a second document after the first, at line */
} gf_ydoc_status;

/* What stopped a load. */
typedef struct {
    gf_ydoc_status status;
    size_t line;               /* 1-based; 0 where there is none */
    char problem[256];         /* GF_YDOC_SYNTAX: libyaml's problem ("malformed" if none) */
    char context[256];         /* GF_YDOC_SYNTAX in the first document: libyaml's context,
                                * "" when none */
} gf_ydoc_error;

/* Load text (len bytes) as exactly one YAML document into *doc, refusing
 * more than max_bytes bytes and nesting deeper than max_depth levels (0:
 * no bound). Returns 0 (the caller deletes *doc with yaml_document_delete),
 * or GF_EINVAL with *err filled and nothing to delete. Logs nothing. The
 * depth is checked before the document is built, and only where the text
 * has more flow openings ('[', '{') than the bound: libyaml's scanner
 * spends time quadratic in the depth of flow collections only. */
int gf_ydoc_load(const char *text, size_t len, size_t max_bytes, int max_depth,
                 yaml_document_t *doc, gf_ydoc_error *err);

/* The node of id i in doc (NULL for none). */
yaml_node_t *gf_ydoc_node(yaml_document_t *doc, int i);
/* The 1-based line a node starts on; 0 for NULL. */
size_t gf_ydoc_line(const yaml_node_t *node);
/* The text of a scalar node; NULL for NULL or any other node. */
const char *gf_ydoc_scalar(const yaml_node_t *node);
/* A plain scalar that YAML reads as null: "", ~, null, Null, NULL. */
bool gf_ydoc_is_null(const yaml_node_t *node);
/* "a mapping", "a list", "null" or "a scalar", for messages. */
const char *gf_ydoc_type_name(const yaml_node_t *node);
/* The value of 'key' in a mapping (the first, if given twice); NULL when
 * map is NULL, not a mapping, or has no such key. */
yaml_node_t *gf_ydoc_get(yaml_document_t *doc, yaml_node_t *map, const char *key);
/* Pairs of a mapping or items of a list; 0 for anything else. */
size_t gf_ydoc_len(const yaml_node_t *node);

/* One pair of a mapping, as the walk meets it. */
typedef struct {
    yaml_node_t *key, *value;
    const char *name;          /* the key's text; NULL when the key is not a scalar */
    long field;                /* index of its entry in the table; -1 when unknown */
    size_t first_line;         /* given twice: the line of its first occurrence; else 0 */
} gf_ydoc_pair;

typedef int (*gf_ydoc_pair_fn)(void *ctx, const gf_ydoc_pair *pair);

/* Walk the pairs of the mapping 'map' in order against a table of the names
 * it allows: entries of 'stride' bytes each beginning with its name (a
 * const char *), the last with a NULL name: a `static const char *const
 * names[]` (stride sizeof(char *)) or an array of structs whose first member
 * is the name. fn is called once per pair; a nonzero return stops the walk
 * and is returned, else 0. */
int gf_ydoc_walk(yaml_document_t *doc, yaml_node_t *map, const void *table, size_t stride,
                 gf_ydoc_pair_fn fn, void *ctx);

#endif
