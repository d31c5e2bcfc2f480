/* cmd_submit.c — `gpuflock submit`: queue one job, an array of jobs, or
 * one job per line of a file; print the job ids, one per line. */
#include "cli/client.h"
#include "common/error.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gf_cmd_submit(int argc, char **argv, gf_cli_ctx *cli);

/* The lines of LIST that are commands (not blank, not # comments). */
static int read_lines(const char *path, char ***lines, size_t *n)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f) {
        fprintf(stderr, "gpuflock submit: --file %s: %s\n", path, strerror(errno));
        return GF_EXIT_NOINPUT;
    }
    *lines = NULL;
    *n = 0;
    size_t cap = 0, lineno = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    int rc = 0;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = 0;
        const char *p = line + strspn(line, " \t");
        if (!*p || *p == '#')
            continue;
        if ((size_t)len > GF_PROTO_MAX_STR || memchr(line, 0, (size_t)len)) {
            fprintf(stderr, "gpuflock submit: %s:%zu: line too long or not text\n", path, lineno);
            rc = GF_EXIT_DATAERR;
            break;
        }
        if (*n == GF_PROTO_MAX_BATCH) {
            fprintf(stderr, "gpuflock submit: %s: more than %u commands\n", path, GF_PROTO_MAX_BATCH);
            rc = GF_EXIT_DATAERR;
            break;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            *lines = gf_realloc(*lines, cap * sizeof(char *));
        }
        (*lines)[(*n)++] = gf_strdup(line);
    }
    free(line);
    if (f != stdin)
        fclose(f);
    if (!rc && *n == 0) {
        fprintf(stderr, "gpuflock submit: %s: no commands\n", path);
        rc = GF_EXIT_DATAERR;
    }
    return rc;
}

int gf_cmd_submit(int argc, char **argv, gf_cli_ctx *cli)
{
    gf_jobopts o;
    int rc = gf_jobopts_parse(argc, argv, &o, true);
    if (rc || o.help) {
        if (o.help)
            gf_jobopts_usage(stdout, "submit");
        gf_jobopts_clear(&o);
        return rc;
    }
    gf_msg req;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_SUBMIT;
    req.spec = o.spec;
    req.array = o.array;
    if (o.file && (rc = read_lines(o.file, &req.commands, &req.n_commands)) != 0)
        goto out_clear;
    gf_client *cl = gf_client_open(o.config, cli, &rc);
    if (!cl)
        goto out_clear;
    gf_msg rep;
    if (gf_client_call(cl, &req, &rep, 60000) != 0) {
        rc = GF_EXIT_UNAVAIL;
    } else if (rep.op != GF_OP_IDS) {
        rc = gf_client_report("submit", &rep);
    } else {
        for (size_t i = 0; i < rep.n_ids; i++)
            printf("%llu\n", (unsigned long long)rep.ids[i]);
        rc = 0;
    }
    gf_msg_clear(&rep);
    gf_client_destroy(&cl);
out_clear:
    memset(&req.spec, 0, sizeof(req.spec));     /* owned by o */
    gf_msg_clear(&req);
    gf_jobopts_clear(&o);
    return rc;
}
