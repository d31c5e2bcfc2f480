/* ydoc.c — loading a YAML document within bounds, and walking it (see
 * ydoc.h).
 *
 * The bounds come first: a text longer than its bound is refused unread,
 * and nesting deeper than its bound is refused by an event pass before the
 * document is built (libyaml's scanner spends time quadratic in the depth
 * of flow collections, "[[[[...": about 50 s of CPU for 100,000 levels; the
 * event parser hands out events as it goes, so the pass stops at the first
 * level too many). Then the text must hold one document, not two. */
#include "common/ydoc.h"
#include "common/error.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

static void set_error(gf_ydoc_error *err, gf_ydoc_status status, size_t line)
{
    memset(err, 0, sizeof *err);
    err->status = status;
    err->line = line;
}

static void set_syntax(gf_ydoc_error *err, const yaml_parser_t *parser, bool with_context)
{
    set_error(err, GF_YDOC_SYNTAX, parser->problem_mark.line + 1);
    snprintf(err->problem, sizeof err->problem, "%s",
             parser->problem ? parser->problem : "malformed");
    if (with_context && parser->context)
        snprintf(err->context, sizeof err->context, "%s", parser->context);
}

/* Nesting deeper than max_depth: GF_EINVAL with *err filled. A syntax error
 * is left to the load, which reports it. */
static int check_depth(const char *text, size_t len, int max_depth, gf_ydoc_error *err)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        set_error(err, GF_YDOC_NO_PARSER, 0);
        return GF_EINVAL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int depth = 0, rc = 0;
    for (bool done = false; !done && !rc;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev))
            break;
        switch (ev.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > max_depth) {
                set_error(err, GF_YDOC_TOO_DEEP, ev.start_mark.line + 1);
                rc = GF_EINVAL;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return rc;
}

int gf_ydoc_load(const char *text, size_t len, size_t max_bytes, int max_depth,
                 yaml_document_t *doc, gf_ydoc_error *err)
{
    set_error(err, GF_YDOC_OK, 0);
    if (max_bytes && len > max_bytes) {
        set_error(err, GF_YDOC_TOO_BIG, 0);
        return GF_EINVAL;
    }
    if (max_depth > 0) {
        /* deeper than the bound needs more flow openings than that: most
         * texts skip the extra pass */
        size_t openings = 0;
        for (size_t i = 0; i < len && openings <= (size_t)max_depth; i++)
            openings += text[i] == '[' || text[i] == '{';
        if (openings > (size_t)max_depth && check_depth(text, len, max_depth, err) != 0)
            return GF_EINVAL;
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        set_error(err, GF_YDOC_NO_PARSER, 0);
        return GF_EINVAL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int rc = 0;
    if (!yaml_parser_load(&parser, doc)) {
        set_syntax(err, &parser, true);
        rc = GF_EINVAL;
    } else {
        yaml_document_t extra;
        if (!yaml_parser_load(&parser, &extra)) {
            set_syntax(err, &parser, false);
            rc = GF_EINVAL;
        } else {
            yaml_node_t *root = yaml_document_get_root_node(&extra);
            if (root) {
                set_error(err, GF_YDOC_SECOND_DOC, gf_ydoc_line(root));
                rc = GF_EINVAL;
            }
            yaml_document_delete(&extra);
        }
        if (rc)
            yaml_document_delete(doc);
    }
    yaml_parser_delete(&parser);
    return rc;
}

yaml_node_t *gf_ydoc_node(yaml_document_t *doc, int i)
{
    return yaml_document_get_node(doc, i);
}

size_t gf_ydoc_line(const yaml_node_t *node)
{
    return node ? node->start_mark.line + 1 : 0;
}

const char *gf_ydoc_scalar(const yaml_node_t *node)
{
    return node && node->type == YAML_SCALAR_NODE ? (const char *)node->data.scalar.value : NULL;
}

bool gf_ydoc_is_null(const yaml_node_t *node)
{
    if (!node || node->type != YAML_SCALAR_NODE ||
        node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *s = gf_ydoc_scalar(node);
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
           !strcmp(s, "NULL");
}

const char *gf_ydoc_type_name(const yaml_node_t *node)
{
    switch (node->type) {
    case YAML_MAPPING_NODE:  return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    default:                 return gf_ydoc_is_null(node) ? "null" : "a scalar";
    }
}

yaml_node_t *gf_ydoc_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    yaml_node_pair_t *end = map->data.mapping.pairs.top;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < end; p++) {
        const char *k = gf_ydoc_scalar(gf_ydoc_node(doc, p->key));
        if (k && strcmp(k, key) == 0)
            return gf_ydoc_node(doc, p->value);
    }
    return NULL;
}

size_t gf_ydoc_len(const yaml_node_t *node)
{
    if (!node)
        return 0;
    if (node->type == YAML_MAPPING_NODE)
        return (size_t)(node->data.mapping.pairs.top - node->data.mapping.pairs.start);
    if (node->type == YAML_SEQUENCE_NODE)
        return (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
    return 0;
}

int gf_ydoc_walk(yaml_document_t *doc, yaml_node_t *map, const void *table, size_t stride,
                 gf_ydoc_pair_fn fn, void *ctx)
{
    assert(map && map->type == YAML_MAPPING_NODE && table && stride >= sizeof(const char *));
    yaml_node_pair_t *start = map->data.mapping.pairs.start, *end = map->data.mapping.pairs.top;
    for (yaml_node_pair_t *p = start; p < end; p++) {
        gf_ydoc_pair pair = { .key = gf_ydoc_node(doc, p->key),
                              .value = gf_ydoc_node(doc, p->value), .field = -1 };
        pair.name = gf_ydoc_scalar(pair.key);
        if (pair.name) {
            for (long i = 0;; i++) {
                const char *n = *(const char *const *)((const char *)table + (size_t)i * stride);
                if (!n)
                    break;
                if (strcmp(n, pair.name) == 0) {
                    pair.field = i;
                    break;
                }
            }
            for (yaml_node_pair_t *q = start; q < p && !pair.first_line; q++) {
                yaml_node_t *k = gf_ydoc_node(doc, q->key);
                const char *prev = gf_ydoc_scalar(k);
                if (prev && strcmp(prev, pair.name) == 0)
                    pair.first_line = gf_ydoc_line(k);
            }
        }
        int rc = fn(ctx, &pair);
        if (rc)
            return rc;
    }
    return 0;
}
