/* cmd_exec.c — `gpuflock exec`: run a command under card locks, no broker.
 *
 * Parses the command line, loads the configuration, takes the cards
 * (cli/jobcards), lets the command inherit the lock descriptors, as
 * flock(1) does, and runs it in its own process group (common/spawn). */
#include "cli/cli.h"
#include "cli/cliopts.h"
#include "cli/jobcards.h"
#include "common/config.h"
#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "common/spawn.h"
#include "common/util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHO "gpuflock exec"
#define MAX_CARDS 64

int gf_cmd_exec(int argc, char **argv, gf_cli_ctx *cli);

extern char **environ;

typedef struct {
    const char *config;     /* --config FILE */
    gf_lock_mode mode;      /* -x / -s */
    int mode_flags;         /* how many of -x, -s were given */
    int cards[MAX_CARDS];   /* --gpu N[,M...] */
    size_t n_cards;
    bool any;               /* --any */
    bool proof;             /* --proof */
    double timeout_s;       /* --timeout SEC; < 0: none */
    char **cmd;             /* CMD [ARG...] */
} exec_opts;

static void usage(FILE *out)
{
    fprintf(out,
        "usage: gpuflock exec [-x|--exclusive | -s|--shared] [--gpu N[,M...] | --any]\n"
        "                     [--timeout SEC] [--proof] [--config FILE] -- CMD [ARG...]\n"
        "\n"
        "Run CMD holding the lock of one or more cards; CMD inherits the lock, as with\n"
        "flock(1), so the card stays locked while any process of the job lives.\n"
        "\n"
        "  -x, --exclusive   lock the cards exclusively (the default)\n"
        "  -s, --shared      lock the cards shared\n"
        "  --gpu N[,M...]    these cards, taken all or none in ascending order\n"
        "  --any             the first free card, else whichever frees first (the default)\n"
        "  --timeout SEC     give up after SEC seconds (fractions allowed; 0: try once)\n"
        "  --proof           also take bench_lock exclusively and remove proof.scrub_env\n"
        "                    variables from CMD's environment\n"
        "  --config FILE     configuration file (else $GPUFLOCK_CONFIG, else\n"
        "                    /etc/gpuflock/gpuflock.yaml, else defaults)\n"
        "\n"
        "CMD sees CUDA_VISIBLE_DEVICES (card UUIDs; indices for cpu cards),\n"
        "CUDA_DEVICE_ORDER=PCI_BUS_ID, GPUFLOCK_DEVICE and GPUFLOCK_LOCK_FILE.\n"
        "Exit status: CMD's own; 128+N if it died of signal N; 75 when --timeout ran\n"
        "out; 64 usage error; 69 card unavailable; 78 configuration error (or no card);\n"
        "126/127 CMD could not be run / found.\n");
}

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad_usage(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gf_cli_usage_error("exec", "%s", msg);
}

/* "0,2,3" into o->cards; duplicates and non-numbers are usage errors. */
static int parse_cards(const char *list, exec_opts *o)
{
    const char *p = list;
    while (*p) {
        char *end = NULL;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT_MAX || (*end && *end != ','))
            return bad_usage("--gpu: '%s' is not a list of card numbers such as 0,1", list);
        for (size_t i = 0; i < o->n_cards; i++)
            if (o->cards[i] == (int)v)
                return bad_usage("--gpu: card repeated in '%s'", list);
        if (o->n_cards == MAX_CARDS)
            return bad_usage("--gpu: too many cards in '%s'", list);
        o->cards[o->n_cards++] = (int)v;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return bad_usage("--gpu: '%s' ends with a comma", list);
    }
    return o->n_cards ? 0 : bad_usage("--gpu: '%s' names no card", list);
}

static int parse_timeout(const char *arg, exec_opts *o)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || *end || errno || !isfinite(v) || v < 0 || v > INT_MAX / 1000.0)
        return bad_usage("--timeout: '%s' is not a number of seconds", arg);
    o->timeout_s = v;
    return 0;
}

enum { OPT_GPU = 256, OPT_ANY, OPT_TIMEOUT, OPT_PROOF, OPT_CONFIG };

static int parse_args(int argc, char **argv, exec_opts *o)
{
    static const struct option longopts[] = {
        { "exclusive", no_argument, NULL, 'x' },
        { "shared", no_argument, NULL, 's' },
        { "gpu", required_argument, NULL, OPT_GPU },
        { "any", no_argument, NULL, OPT_ANY },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "proof", no_argument, NULL, OPT_PROOF },
        { "config", required_argument, NULL, OPT_CONFIG },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *o = (exec_opts){ .mode = GF_LOCK_EXCLUSIVE, .timeout_s = -1 };
    optind = 0;   /* a full reset of getopt's state */
    opterr = 0;
    int c, rc = 0;
    while (!rc && (c = getopt_long(argc, argv, "+:xsh", longopts, NULL)) != -1) {
        switch (c) {
        case 'x': o->mode = GF_LOCK_EXCLUSIVE; o->mode_flags |= 1; break;
        case 's': o->mode = GF_LOCK_SHARED; o->mode_flags |= 2; break;
        case OPT_GPU: rc = o->n_cards ? bad_usage("--gpu %s: given twice", optarg)
                                      : parse_cards(optarg, o); break;
        case OPT_ANY: o->any = true; break;
        case OPT_TIMEOUT: rc = parse_timeout(optarg, o); break;
        case OPT_PROOF: o->proof = true; break;
        case OPT_CONFIG: o->config = optarg; break;
        case 'h': usage(stdout); return -1;
        default:
            return gf_cli_opt_error("exec", c, argc, argv, longopts);
        }
    }
    if (rc)
        return rc;
    if (o->mode_flags == 3)
        return bad_usage("%s", "-x and -s: choose one mode");
    if (o->any && o->n_cards)
        return bad_usage("%s", "--gpu and --any: choose one");
    if (optind >= argc)
        return bad_usage("%s", "no command given (usage: gpuflock exec [OPTIONS] -- CMD [ARG...])");
    o->cmd = argv + optind;
    return 0;
}

static int exit_for(int rc, const exec_opts *o)
{
    switch (rc) {
    case GF_ETIMEDOUT:
        fprintf(stderr, WHO ": timed out after %g s waiting for the lock\n", o->timeout_s);
        return GF_EXIT_TEMPFAIL;
    case GF_ENOENT:
        return GF_EXIT_USAGE;
    case GF_ECONFIG:
        return GF_EXIT_CONFIG;
    default:
        return GF_EXIT_UNAVAIL;
    }
}

/* The cards are held: build the environment and run the command. */
static int run_command(gf_jobcards *cards, const exec_opts *o)
{
    if (gf_jobcards_inherit(cards) != 0)
        return GF_EXIT_UNAVAIL;
    gf_env *env = gf_env_new(environ);
    char *removed = NULL;
    gf_jobcards_export(cards, env, &removed);
    if (o->proof)
        fprintf(stderr, WHO ": --proof: bench lock held; removed from the environment: %s\n",
                removed ? removed : "nothing (none of proof.scrub_env was set)");
    free(removed);
    int status = 0;
    int rc = gf_spawn_run(o->cmd, gf_env_array(env), &status);
    gf_env_destroy(&env);
    return rc ? GF_EXIT_SOFTWARE : status;
}

int gf_cmd_exec(int argc, char **argv, gf_cli_ctx *cli)
{
    (void)cli;     /* no broker client here */
    exec_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    gf_config *cfg = NULL;
    if (gf_config_load(o.config, &cfg) != 0)
        return GF_EXIT_CONFIG;
    gf_jobcards_request req = {
        .mode = o.mode,
        .cards = o.n_cards ? o.cards : NULL,
        .n_cards = o.n_cards,
        .proof = o.proof,
        .timeout_ms = o.timeout_s < 0 ? -1 : (int)ceil(o.timeout_s * 1000.0),
        .who = WHO,
    };
    gf_jobcards *cards = NULL;
    rc = gf_jobcards_take(cfg, &req, &cards);
    int status = rc ? exit_for(rc, &o) : run_command(cards, &o);
    gf_jobcards_destroy(&cards);
    gf_config_destroy(&cfg);
    return status;
}
