/* cmd_evidence.c — `gpuflock evidence check|prune [DIR]`: validate evidence
 * tables, and remove the records no proof cites.
 *
 * check runs the same validator the worker runs at start-up and the build
 * runs after linking (route/evidence.c), prints every problem, one per
 * line, then a summary, then a warning naming the orphan records (a count,
 * and their names with -v or when they are few): orphans never make the
 * tables invalid (docs/evidence.md says why). prune removes the orphans of
 * tables that validate (route/evidence_orphans.c: regular files only,
 * inside DIR/records, never a cited one); --dry-run lists them and removes
 * nothing. Exit 0 when the tables are valid, 65 when they are not, 66 when
 * the directory is missing, 74 when a removal failed. */
#include "cli/cli.h"
#include "cli/cliopts.h"
#include "common/error.h"
#include "route/evidence.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int gf_cmd_evidence(int argc, char **argv, gf_cli_ctx *cli);

/* Orphans listed by name without -v up to this many. */
#define FEW_ORPHANS 10

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpuflock evidence check [-v] [DIR]\n"
            "       gpuflock evidence prune [--dry-run] [-v] [DIR]\n"
            "\n"
            "check: validate the evidence tables in DIR (default: $GPUFLOCK_EVIDENCE, else the\n"
            "evidence/ folder of the tree gpuflock was built from): the route precedence\n"
            "list, every binding under DIR/bindings/ and every record it names under\n"
            "DIR/records/. Prints each problem as FILE:LINE: binding 'ID': problem, then\n"
            "warns of orphan records (under records/, cited by no proof): their count, and\n"
            "their names with -v or when there are few. Orphans do not make DIR invalid.\n"
            "\n"
            "prune: remove the orphan records of DIR, whose tables must validate first.\n"
            "Only regular files named <sha256>.json inside DIR/records/ are removed (a\n"
            "symbolic link is never followed, nor removed); a cited record never is.\n"
            "--dry-run lists what would be removed and removes nothing; -v lists each removal.\n"
            "\n"
            "Exit status: 0 valid, 65 invalid, 66 no such directory, 64 usage,\n"
            "74 a record could not be removed.\n");
}

typedef struct {
    bool prune;                /* prune (else check) */
    bool dry_run;              /* prune: list only */
    bool verbose;              /* name every orphan */
    const char *dir;           /* the evidence directory */
} options;

/* The verb first, then its options and DIR in any order. 0, or
 * GF_EXIT_USAGE after saying what is wrong. */
static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){ .dir = NULL };
    if (argc < 2)
        return gf_cli_usage_error("evidence", "no verb given (usage: gpuflock evidence "
                                  "check|prune [DIR])");
    if (argv[1][0] == '-')
        return gf_cli_usage_error("evidence", "option '%s' before the verb (usage: gpuflock "
                                  "evidence check|prune [OPTIONS] [DIR])", argv[1]);
    if (strcmp(argv[1], "prune") == 0)
        o->prune = true;
    else if (strcmp(argv[1], "check") != 0)
        return gf_cli_usage_error("evidence", "unknown verb '%s' (usage: gpuflock evidence "
                                  "check|prune [DIR])", argv[1]);
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0)
            o->verbose = true;
        else if (o->prune && strcmp(argv[i], "--dry-run") == 0)
            o->dry_run = true;
        else if (argv[i][0] == '-')
            return gf_cli_usage_error("evidence", "unknown option '%s' of %s (`gpuflock evidence "
                                      "--help` lists them)", argv[i], argv[1]);
        else if (o->dir)
            return gf_cli_usage_error("evidence", "one evidence directory, not '%s' too",
                                      argv[i]);
        else
            o->dir = argv[i];
    }
    if (!o->dir)
        o->dir = gf_evidence_default_dir();
    return 0;
}

typedef struct {
    size_t n[3];               /* per gf_orphan_kind */
    size_t removable;          /* what prune would remove */
    unsigned long long bytes;  /* of the removable ones */
} tally;

static tally count(const gf_orphan *list, size_t n)
{
    tally t = { { 0 }, 0, 0 };
    for (size_t i = 0; i < n; i++) {
        t.n[list[i].kind]++;
        if (list[i].removable) {
            t.removable++;
            t.bytes += list[i].bytes;
        }
    }
    return t;
}

/* One orphan, its path under the loaded directory (dir: as gf_evidence_dir). */
static void print_orphan(FILE *out, const char *dir, const gf_orphan *o, const char *verb)
{
    const char *who = out == stderr ? "gpuflock evidence: " : "";
    if (o->removable)
        fprintf(out, "%s%s%s/records/%s: orphan: %s\n", who, verb, dir, o->name,
                gf_orphan_kind_describe(o->kind));
    else
        fprintf(out, "%s%s/records/%s: orphan, %s; kept by prune: %s\n", who, dir, o->name,
                gf_orphan_kind_describe(o->kind), o->why_kept);
}

/* check: the orphans as a warning. */
static int warn_orphans(const gf_evidence *ev, const char *dir, bool verbose)
{
    gf_orphan *list = NULL;
    size_t n = 0;
    if (gf_evidence_orphans(ev, &list, &n) != 0)
        return GF_EXIT_IOERR;
    if (n == 0)
        return 0;
    tally t = count(list, n);
    if (verbose || n <= FEW_ORPHANS)
        for (size_t i = 0; i < n; i++)
            print_orphan(stderr, gf_evidence_dir(ev), &list[i], "");
    fprintf(stderr,
            "gpuflock evidence: %s: warning: %zu orphan record%s, cited by no proof (%zu of "
            "modules no binding names, %zu of bound modules, %zu not records); `gpuflock "
            "evidence prune %s` would remove %zu (%llu bytes)\n",
            dir, n, n == 1 ? "" : "s", t.n[GF_ORPHAN_UNBOUND], t.n[GF_ORPHAN_UNCITED],
            t.n[GF_ORPHAN_STRAY], dir, t.removable, t.bytes);
    gf_evidence_orphans_free(&list, n);
    return 0;
}

static int prune(const gf_evidence *ev, const char *dir, bool dry_run, bool verbose)
{
    gf_orphan *list = NULL;
    size_t n = 0;
    if (gf_evidence_orphans(ev, &list, &n) != 0)
        return GF_EXIT_IOERR;
    size_t removed = 0, kept = 0, failed = 0;
    unsigned long long bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const gf_orphan *o = &list[i];
        if (!o->removable) {
            print_orphan(stderr, gf_evidence_dir(ev), o, "");
            kept++;
            continue;
        }
        if (dry_run) {
            print_orphan(stdout, gf_evidence_dir(ev), o, "would remove ");
        } else if (gf_evidence_orphan_remove(ev, o) != 0) {
            fprintf(stderr, "gpuflock evidence: cannot remove %s/records/%s: %s\n",
                    gf_evidence_dir(ev), o->name,
                    strerror(errno));
            failed++;
            continue;
        } else if (verbose) {
            print_orphan(stdout, gf_evidence_dir(ev), o, "removed ");
        }
        removed++;
        bytes += o->bytes;
    }
    printf("%s: %s %zu orphan record%s (%llu bytes)%s\n", dir,
           dry_run ? "would remove" : "removed", removed, removed == 1 ? "" : "s", bytes,
           dry_run ? "; dry run: nothing removed" : "");
    if (kept)
        printf("%s: kept %zu orphan entr%s that prune does not remove\n", dir, kept,
               kept == 1 ? "y" : "ies");
    gf_evidence_orphans_free(&list, n);
    return failed ? GF_EXIT_IOERR : 0;
}

int gf_cmd_evidence(int argc, char **argv, gf_cli_ctx *cli)
{
    (void)cli;     /* no broker client here */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    options o;
    if (parse_args(argc, argv, &o) != 0)
        return GF_EXIT_USAGE;
    gf_evidence *ev = gf_evidence_new();
    int rc = gf_evidence_load(ev, o.dir);
    size_t n = gf_evidence_problem_count(ev);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "gpuflock evidence: %s\n", gf_evidence_problem(ev, i));
    int status = 0;
    if (rc == GF_ENOENT) {
        status = GF_EXIT_NOINPUT;
    } else if (rc != 0) {
        fprintf(stderr, "gpuflock evidence: %s rejected: %zu problem%s%s\n", o.dir, n,
                n == 1 ? "" : "s",
                o.prune ? "; nothing pruned (which records are cited is known only of tables "
                          "that validate)" : "");
        status = GF_EXIT_DATAERR;
    } else if (o.prune) {
        status = prune(ev, o.dir, o.dry_run, o.verbose);
    } else {
        size_t proofs = 0, measured = 0;
        for (size_t i = 0; i < gf_evidence_binding_count(ev); i++) {
            const gf_binding *b = gf_evidence_binding(ev, i);
            proofs += b->n_proofs;
            for (size_t j = 0; j < b->n_proofs; j++)
                measured += b->proofs[j].measured;
        }
        printf("%s: valid: %zu binding%s, %zu proof%s (%zu measured)\n", o.dir,
               gf_evidence_binding_count(ev), gf_evidence_binding_count(ev) == 1 ? "" : "s",
               proofs, proofs == 1 ? "" : "s", measured);
        fflush(stdout);   /* the summary before the warnings, on a pipe as on a terminal */
        status = warn_orphans(ev, o.dir, o.verbose);
    }
    gf_evidence_destroy(&ev);
    return status;
}
