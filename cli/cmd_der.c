/* cmd_der.c — `gpuflock der REF.rttm HYP.rttm [--collar SEC] [--skip-overlap]
 * [--uem FILE] [--json]`: diarization error rate per file and in total.
 *
 * Reads the two RTTM files with the shared reader (diar/io/rttm) and the
 * UEM here, and hands plain turns to diar/score/der. */
#include "cli/cli.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/score/der.h"
#include "diar/io/rttm.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gf_cmd_der(int argc, char **argv, gf_cli_ctx *cli);

/* Owned copies of the UEM's file names. */
typedef struct {
    char **strings;      /* the copies */
    size_t n_strings;    /* how many */
} name_pool;

static const char *keep(name_pool *np, const char *s)
{
    np->strings = gf_realloc(np->strings, (np->n_strings + 1) * sizeof(char *));
    np->strings[np->n_strings] = gf_strdup(s);
    return np->strings[np->n_strings++];
}

static void name_pool_free(name_pool *np)
{
    for (size_t i = 0; i < np->n_strings; i++)
        free(np->strings[i]);
    free(np->strings);
    memset(np, 0, sizeof *np);
}

/* Split line into whitespace-separated fields; returns the count (max cap). */
static size_t split(char *line, char **f, size_t cap)
{
    size_t n = 0;
    for (char *tok = strtok(line, " \t\r\n"); tok && n < cap; tok = strtok(NULL, " \t\r\n"))
        f[n++] = tok;
    return n;
}

/* Turns of an RTTM as der wants them; strings borrowed from r. */
static gf_der_turn *der_turns(const gf_rttm *r)
{
    gf_der_turn *t = gf_malloc((r->n + 1) * sizeof(gf_der_turn));
    for (size_t i = 0; i < r->n; i++)
        t[i] = (gf_der_turn){ r->turns[i].uri, r->turns[i].speaker, r->turns[i].start,
                              r->turns[i].start + r->turns[i].duration };
    return t;
}

/* UEM: "uri channel start end" per line, text as the RTTM reader wants it
 * (gf_rttm_check_text) and times in its range (gf_rttm_parse_time). */
static int read_uem(const char *path, gf_der_span **out, size_t *n_out, name_pool *names)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        GF_ERROR("cannot open UEM %s: %s", path, strerror(e));
        return e == ENOENT ? GF_ENOENT : GF_EIO;
    }
    char *buf = NULL;
    size_t bufcap = 0;
    ssize_t len;
    size_t line = 0, n = 0, cap = 0;
    gf_der_span *v = NULL;
    int rc = 0;
    while ((len = getline(&buf, &bufcap, f)) >= 0) {
        line++;
        size_t ll = (size_t)len;
        if (ll && buf[ll - 1] == '\n')
            buf[--ll] = '\0';
        if (ll && buf[ll - 1] == '\r')
            buf[--ll] = '\0';
        if ((rc = gf_rttm_check_text(path, line, buf, ll)) != 0)
            break;
        char *fld[6];
        size_t nf = split(buf, fld, 6);
        if (nf == 0 || fld[0][0] == ';' || fld[0][0] == '#')
            continue;
        if (nf != 4) {
            GF_ERROR("%s:%zu: UEM line has %zu fields, needs 4 (uri channel start end)", path,
                     line, nf);
            rc = GF_EINVAL;
            break;
        }
        double s, e;
        if ((rc = gf_rttm_parse_time(path, line, "start", fld[2], &s)) != 0 ||
            (rc = gf_rttm_parse_time(path, line, "end", fld[3], &e)) != 0)
            break;
        if (e < s) {
            GF_ERROR("%s:%zu: end %s before start %s", path, line, fld[3], fld[2]);
            rc = GF_EINVAL;
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            v = gf_realloc(v, cap * sizeof(gf_der_span));
        }
        v[n++] = (gf_der_span){ keep(names, fld[0]), s, e };
    }
    if (!rc && ferror(f)) {
        GF_ERROR("UEM %s: read error", path);
        rc = GF_EIO;
    }
    free(buf);
    fclose(f);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *n_out = n;
    return 0;
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: gpuflock der REF.rttm HYP.rttm [--collar SEC] [--skip-overlap] [--uem FILE]"
            " [--json]\n"
            "  Diarization error rate (missed speech, false alarm, speaker confusion) per file\n"
            "  and in total, as pyannote.metrics computes it, with the optimal speaker mapping.\n"
            "  --collar SEC     ignore SEC seconds in total around each reference boundary\n"
            "                   (SEC/2 on each side); default 0\n"
            "  --skip-overlap   do not score regions where reference speakers overlap\n"
            "  --uem FILE       score only these spans (uri channel start end per line);\n"
            "                   default: each file from its first to its last turn in\n"
            "                   either RTTM\n"
            "  --json           one JSON object instead of the table\n"
            "  RTTM files are UTF-8 text with at least one SPEAKER line (times 0 to 1e7 s);\n"
            "  an empty file is a recording with no speech. Exit 65: bad input data.\n");
}

static json_object *components_json(const gf_der_components *c)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "total", json_object_new_double(c->total));
    json_object_object_add(o, "correct", json_object_new_double(c->correct));
    json_object_object_add(o, "missed_speech", json_object_new_double(c->missed));
    json_object_object_add(o, "false_alarm", json_object_new_double(c->false_alarm));
    json_object_object_add(o, "confusion", json_object_new_double(c->confusion));
    json_object_object_add(o, "der", json_object_new_double(gf_der_rate(c)));
    return o;
}

static void print_json(const gf_der_report *rep, const gf_der_options *opt)
{
    json_object *root = json_object_new_object();
    json_object_object_add(root, "collar", json_object_new_double(opt->collar));
    json_object_object_add(root, "skip_overlap", json_object_new_boolean(opt->skip_overlap));
    json_object *files = json_object_new_array();
    for (size_t k = 0; k < rep->n_files; k++) {
        const gf_der_file *f = &rep->files[k];
        json_object *o = components_json(&f->c);
        json_object_object_add(o, "uri", json_object_new_string(f->uri));
        json_object *map = json_object_new_object();
        for (size_t i = 0; i < f->n_map; i++)
            json_object_object_add(map, f->map_hyp[i], json_object_new_string(f->map_ref[i]));
        json_object_object_add(o, "mapping", map);
        json_object_array_add(files, o);
    }
    json_object_object_add(root, "files", files);
    json_object_object_add(root, "all", components_json(&rep->total));
    printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(root);
}

static void print_row(const char *name, const gf_der_components *c)
{
    printf("%-24s %10.3f %10.3f %10.3f %10.3f %10.3f %7.2f\n", name, c->total, c->missed,
           c->false_alarm, c->confusion, c->correct, 100.0 * gf_der_rate(c));
}

static void print_table(const gf_der_report *rep)
{
    printf("%-24s %10s %10s %10s %10s %10s %7s\n", "file", "total", "missed", "false_al",
           "confusion", "correct", "DER%");
    for (size_t k = 0; k < rep->n_files; k++)
        print_row(rep->files[k].uri, &rep->files[k].c);
    print_row("TOTAL", &rep->total);
}

int gf_cmd_der(int argc, char **argv, gf_cli_ctx *cli)
{
    (void)cli;     /* no broker client here */
    gf_der_options opt = { 0.0, false };
    const char *paths[2] = { NULL, NULL }, *uem_path = NULL;
    int n_paths = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--skip-overlap") == 0) {
            opt.skip_overlap = true;
        } else if (strcmp(a, "--collar") == 0 || strcmp(a, "--uem") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "gpuflock der: option '%s' needs a value\n", a);
                return GF_EXIT_USAGE;
            }
            const char *val = argv[++i];
            if (a[2] == 'u') {
                uem_path = val;
            } else {
                char *end;
                opt.collar = strtod(val, &end);
                if (*end || end == val || !isfinite(opt.collar) || opt.collar < 0) {
                    fprintf(stderr, "gpuflock der: --collar '%s' is not a number of seconds >= 0\n",
                            val);
                    return GF_EXIT_USAGE;
                }
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "gpuflock der: unknown option '%s' (`gpuflock der --help` lists "
                    "them)\n", a);
            return GF_EXIT_USAGE;
        } else if (n_paths < 2) {
            paths[n_paths++] = a;
        } else {
            fprintf(stderr, "gpuflock der: one reference and one hypothesis, not '%s' too\n", a);
            return GF_EXIT_USAGE;
        }
    }
    if (n_paths != 2) {
        fprintf(stderr, "gpuflock der: a reference and a hypothesis RTTM, please (usage: "
                "gpuflock der REF.rttm HYP.rttm [OPTIONS])\n");
        return GF_EXIT_USAGE;
    }

    gf_rttm *ref = NULL, *hyp = NULL;
    gf_der_turn *rt = NULL, *ht = NULL;
    name_pool names = { 0 };
    gf_der_span *uem = NULL;
    size_t n_uem = 0;
    gf_der_report *rep = NULL;
    int status = 0, rc;
    if ((rc = gf_rttm_read(paths[0], &ref)) != 0 || (rc = gf_rttm_read(paths[1], &hyp)) != 0 ||
        (uem_path && (rc = read_uem(uem_path, &uem, &n_uem, &names)) != 0)) {
        status = (rc == GF_ENOENT || rc == GF_EIO) ? GF_EXIT_NOINPUT : GF_EXIT_DATAERR;
        goto out_free;
    }
    /* The reader accepts a file without turns only when it is blank. */
    for (int k = 0; k < 2; k++)
        if ((k ? hyp : ref)->n == 0)
            GF_WARN("%s is empty: scored as a %s with no speech", paths[k],
                    k ? "hypothesis" : "reference");
    rt = der_turns(ref);
    ht = der_turns(hyp);
    rc = gf_der_score(rt, ref->n, ht, hyp->n, uem, n_uem, uem_path != NULL, &opt, &rep);
    if (rc) {
        status = GF_EXIT_DATAERR;
        goto out_free;
    }
    if (json)
        print_json(rep, &opt);
    else
        print_table(rep);
out_free:
    gf_der_report_destroy(&rep);
    free(uem);
    free(rt);
    free(ht);
    gf_rttm_destroy(&ref);
    gf_rttm_destroy(&hyp);
    name_pool_free(&names);
    return status;
}
