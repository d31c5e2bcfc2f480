/* cmd_plan.c — `gpuflock plan`: the route of every layer boundary on a card.
 *
 * For every boundary x production batch x math mode, the route the worker
 * would take on that card (route/planner.c) and the evidence record it
 * stands on, or why it is the library route. The card is a configured one
 * (--gpu N, identified through the driver) or a described one (--card
 * "NAME:CC:SMS"), so a plan can be read for a card this machine does not
 * have. The modules are the ones embedded in this binary, with their
 * kernels' own planning step (diar/kernel_plan.h): a layer a kernel
 * refuses on that card is the library route, and the reason is shown. */
#include "cli/cli.h"
#include "cli/cliopts.h"
#include "common/card.h"
#include "common/config.h"
#include "common/error.h"
#include "common/util.h"
#include "route/evidence.h"
#include "diar/kernel_plan.h"
#include "route/planner.h"

#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gf_cmd_plan(int argc, char **argv, gf_cli_ctx *cli);

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpuflock plan [--gpu N | --card \"NAME:CC:SMS\"] [--json] [--evidence DIR]\n"
            "                     [--config FILE]\n"
            "\n"
            "Show the route of every layer boundary x production batch (1, 8, 32) x math\n"
            "(fp32, tf32) on one card: the project's own kernel and the evidence record it\n"
            "stands on, or the library route and why.\n"
            "\n"
            "  --gpu N          the configured card N, identified through the CUDA driver\n"
            "                   (default: card 0)\n"
            "  --card SPEC      a described card, e.g. \"NVIDIA H200:9.0:132\" (name, compute\n"
            "                   capability, multiprocessor count); no GPU needed\n"
            "  --json           one JSON object: card, evidence, routes\n"
            "  --evidence DIR   evidence tables (default: $GPUFLOCK_EVIDENCE, else the\n"
            "                   evidence/ folder of the tree gpuflock was built from)\n"
            "  --config FILE    configuration file (for --gpu)\n"
            "\n"
            "GPUFLOCK_FORCE_LIBRARY=1 puts every boundary on the library route.\n"
            "Exit status: 0 planned, 64 usage, 65 evidence invalid, 66 evidence missing,\n"
            "69 card unavailable, 70 planning failed, 78 configuration error.\n");
}

static int identify(const char *config_path, int gpu, gf_card_identity *card)
{
    gf_config *cfg = NULL;
    if (gf_config_load(config_path, &cfg) != 0)
        return GF_EXIT_CONFIG;
    const gf_device_conf *dev = gf_config_device(cfg, gpu);
    int status = 0;
    if (!dev) {
        fprintf(stderr, "gpuflock plan: no card %d in the configuration (%s)\n", gpu,
                cfg->path ? cfg->path : "built-in defaults: one per CUDA card found");
        status = GF_EXIT_UNAVAIL;
    } else if (gf_card_identify(dev, card) != 0) {
        fprintf(stderr, "gpuflock plan: card %d cannot be identified\n", gpu);
        status = GF_EXIT_UNAVAIL;
    }
    gf_config_destroy(&cfg);
    return status;
}

static void print_text(const gf_card_identity *card, const char *dir, const gf_evidence *ev,
                       const gf_planner *pl, const gf_route *routes, size_t n)
{
    char *id = card->index < 0
                   ? gf_strfmt("%s cc %d.%d, %d SMs (described)", card->name, card->cc_major,
                               card->cc_minor, card->sm_count)
                   : gf_card_format(card);
    size_t own = 0;
    for (size_t i = 0; i < n; i++)
        own += routes[i].kind == GF_ROUTE_OWN;
    printf("card:      %s\n", id);
    printf("evidence:  %s (%zu binding%s)\n", dir, gf_evidence_binding_count(ev),
           gf_evidence_binding_count(ev) == 1 ? "" : "s");
    printf("modules:   %s\n", pl->modules->name);
    printf("routes:    %zu own, %zu library%s\n\n", own, n - own,
           pl->force_library ? " (" GF_FORCE_LIBRARY_ENV "=1)" : "");
    printf("%-26s %5s %-4s  %-7s %-15s %s\n", "BOUNDARY", "BATCH", "MATH", "ROUTE", "WHY",
           "EVIDENCE / REASON");
    for (size_t i = 0; i < n; i++) {
        const gf_route *r = &routes[i];
        printf("%-26s %5d %-4s  %-7s %-15s %s\n", r->boundary, r->batch, gf_math_name(r->math),
               gf_route_kind_name(r->kind), gf_route_why_name(r->why), r->detail);
    }
    free(id);
}

static void print_json(const gf_card_identity *card, const char *dir, const gf_planner *pl,
                       const gf_route *routes, size_t n)
{
    json_object *o = json_object_new_object();
    json_object *c = gf_card_to_json(card);
    json_object_object_add(c, "described", json_object_new_boolean(card->index < 0));
    json_object_object_add(o, "card", c);
    json_object_object_add(o, "evidence", json_object_new_string(dir));
    json_object_object_add(o, "modules", json_object_new_string(pl->modules->name));
    json_object_object_add(o, "force_library", json_object_new_boolean(pl->force_library));
    json_object_object_add(o, "routes", gf_plan_to_json(routes, n));
    printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

int gf_cmd_plan(int argc, char **argv, gf_cli_ctx *cli)
{
    (void)cli;     /* no broker client here */
    static const struct option opts[] = {
        { "gpu", required_argument, NULL, 'g' },
        { "card", required_argument, NULL, 'c' },
        { "json", no_argument, NULL, 'j' },
        { "evidence", required_argument, NULL, 'e' },
        { "config", required_argument, NULL, 'C' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *card_spec = NULL, *config_path = NULL;
    const char *dir = gf_evidence_default_dir();
    int gpu = 0;
    bool have_gpu = false, json = false;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        switch (ch) {
        case 'g': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 0 || v > 4096) {
                fprintf(stderr, "gpuflock plan: --gpu '%s' is not a card number\n", optarg);
                return GF_EXIT_USAGE;
            }
            gpu = (int)v;
            have_gpu = true;
            break;
        }
        case 'c': card_spec = optarg; break;
        case 'j': json = true; break;
        case 'e': dir = optarg; break;
        case 'C': config_path = optarg; break;
        case 'h': usage(stdout); return 0;
        default: return gf_cli_opt_error("plan", ch, argc, argv, opts);
        }
    }
    if (optind < argc)
        return gf_cli_usage_error("plan", "unexpected argument '%s'", argv[optind]);
    if (have_gpu && card_spec)
        return gf_cli_usage_error("plan", "give --gpu or --card, not both");

    gf_card_identity card;
    if (card_spec) {
        if (gf_card_parse_spec(card_spec, &card) != 0) {
            fprintf(stderr, "gpuflock plan: --card '%s': expected \"NAME:CC:SMS\", e.g. "
                    "\"NVIDIA H200:9.0:132\"\n", card_spec);
            return GF_EXIT_USAGE;
        }
    } else {
        int status = identify(config_path, gpu, &card);
        if (status != 0)
            return status;
    }

    gf_evidence *ev = gf_evidence_new();
    int rc = gf_evidence_load(ev, dir);
    if (rc != 0) {
        for (size_t i = 0; i < gf_evidence_problem_count(ev); i++)
            fprintf(stderr, "gpuflock plan: %s\n", gf_evidence_problem(ev, i));
        fprintf(stderr, "gpuflock plan: evidence %s rejected: no plan (`gpuflock evidence check "
                "%s` says the same)\n", dir, dir);
        gf_evidence_destroy(&ev);
        return rc == GF_ENOENT ? GF_EXIT_NOINPUT : GF_EXIT_DATAERR;
    }
    gf_planner pl = {
        .evidence = ev,
        .card = &card,
        .modules = &gf_kernel_modules,
        .force_library = gf_planner_force_library_env(),
    };
    gf_route *routes = NULL;
    size_t n = 0;
    rc = gf_plan_all(&pl, &routes, &n);
    int status = 0;
    if (rc != 0) {
        fprintf(stderr, "gpuflock plan: planning failed: %s\n", gf_strerror(rc));
        status = GF_EXIT_SOFTWARE;
    } else if (json) {
        print_json(&card, dir, &pl, routes, n);
    } else {
        print_text(&card, dir, ev, &pl, routes, n);
    }
    free(routes);
    gf_evidence_destroy(&ev);
    return status;
}
