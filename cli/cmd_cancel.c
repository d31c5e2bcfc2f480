/* cmd_cancel.c — `gpuflock cancel [--checkpoint] ID...`: pending jobs leave
 * the queue, running ones get SIGTERM on their whole process group (SIGKILL
 * after kill_grace_s); with --checkpoint a running yieldable job saves its
 * progress and waits, held, instead. Only your own jobs, unless you are
 * root. */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "common/error.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int gf_cmd_cancel(int argc, char **argv);

int gf_cmd_cancel(int argc, char **argv)
{
    const char *config = NULL;
    bool checkpoint = false;
    const gf_cli_flag flags[] = { { "checkpoint", 0, &checkpoint }, { NULL, 0, NULL } };
    int prc = gf_cli_flags(argc, argv,
                           "usage: gpuflock cancel [--checkpoint] [--config FILE] ID...\n"
                           "  --checkpoint  a running diarize or --yieldable job saves its "
                           "progress and\n                waits, held (gpuflock release: it "
                           "resumes); others are cancelled\n", flags, &config);
    if (prc)
        return prc < 0 ? 0 : prc;
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_CANCEL;
    req.checkpoint = checkpoint;
    if (optind == argc ||
        gf_parse_ids("cancel", argc - optind, argv + optind, &req.ids, &req.n_ids)) {
        fprintf(stderr, "usage: gpuflock cancel [--checkpoint] [--config FILE] ID...\n");
        return GF_EXIT_USAGE;
    }
    int rc;
    gf_client *cl = gf_client_open(config, &rc);
    if (!cl) {
        gf_msg_clear(&req);
        return rc;
    }
    if (gf_client_call(cl, &req, &rep, 30000) != 0) {
        rc = GF_EXIT_UNAVAIL;
    } else if (rep.op != GF_OP_CODES || rep.n_codes != req.n_ids) {
        rc = gf_client_report("cancel", &rep);
    } else {
        rc = 0;
        for (size_t i = 0; i < rep.n_codes; i++) {
            int code = rep.codes[i];
            if (code == 0)
                continue;
            fprintf(stderr, "gpuflock cancel: job %llu: %s\n", (unsigned long long)req.ids[i],
                    code == GF_ENOENT ? "no such job"
                    : code == GF_EPERM ? "not your job"
                    : code == GF_ESTATE ? "already ended" : gf_strerror(code));
            if (!rc || code == GF_EPERM)
                rc = code == GF_EPERM ? 77 : 1;
        }
    }
    gf_msg_clear(&rep);
    gf_msg_clear(&req);
    gf_client_destroy(&cl);
    return rc;
}
