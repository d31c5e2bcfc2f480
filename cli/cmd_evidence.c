/* cmd_evidence.c — `gpuflock evidence check [DIR]`: validate evidence tables.
 *
 * The same validator the worker runs at start-up and the build runs after
 * linking (route/evidence.c). Prints every problem, one per line, then a
 * summary; exit 0 when the tables are valid, 65 when they are not, 66 when
 * the directory is missing. */
#include "common/error.h"
#include "route/evidence.h"

#include <stdio.h>
#include <string.h>

int gf_cmd_evidence(int argc, char **argv);

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpuflock evidence check [DIR]\n"
            "\n"
            "Validate the evidence tables in DIR (default: $GPUFLOCK_EVIDENCE, else the evidence/\n"
            "folder of the tree gpuflock was built from): the route precedence\n"
            "list, every binding under DIR/bindings/ and every record it names under\n"
            "DIR/records/. Prints each problem as FILE:LINE: binding 'ID': problem.\n"
            "Exit status: 0 valid, 65 invalid, 66 no such directory, 64 usage.\n");
}

int gf_cmd_evidence(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "check") != 0 || argc > 3 ||
        (argc == 3 && argv[2][0] == '-')) {
        usage(stderr);
        return GF_EXIT_USAGE;
    }
    const char *dir = argc == 3 ? argv[2] : gf_evidence_default_dir();
    gf_evidence *ev = gf_evidence_new();
    int rc = gf_evidence_load(ev, dir);
    size_t n = gf_evidence_problem_count(ev);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s\n", gf_evidence_problem(ev, i));
    int status = 0;
    if (rc == GF_ENOENT) {
        status = GF_EXIT_NOINPUT;
    } else if (rc != 0) {
        fprintf(stderr, "gpuflock evidence: %s rejected: %zu problem%s\n", dir, n,
                n == 1 ? "" : "s");
        status = GF_EXIT_DATAERR;
    } else {
        size_t proofs = 0, measured = 0;
        for (size_t i = 0; i < gf_evidence_binding_count(ev); i++) {
            const gf_binding *b = gf_evidence_binding(ev, i);
            proofs += b->n_proofs;
            for (size_t j = 0; j < b->n_proofs; j++)
                measured += b->proofs[j].measured;
        }
        printf("%s: valid: %zu binding%s, %zu proof%s (%zu measured)\n", dir,
               gf_evidence_binding_count(ev), gf_evidence_binding_count(ev) == 1 ? "" : "s",
               proofs, proofs == 1 ? "" : "s", measured);
    }
    gf_evidence_destroy(&ev);
    return status;
}
