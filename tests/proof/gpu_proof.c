/* gpu_proof.c — the GPU proof suite: `make gpu-proof` runs it through
 * `gpuflock exec --proof` on a card.
 *
 * It proves where it runs before it proves anything else: under the card's
 * lock (a fresh open of GPUFLOCK_LOCK_FILE and a non-blocking try must report
 * "would block") and without the configuration's scrubbed override variables.
 * Then it prints the card's identity and route plan, and runs the GPU checks
 * (every kernel and both routes against the CPU references on random inputs:
 * the programs under build/tests/gpu), and the whole pipeline on the GPU
 * against the CPU on the same recording with the same weights (identical
 * turns; GF_TEST_MODELS and GF_PROOF_AUDIO). Any failure: exit 1. Without a CUDA
 * device it says so and exits 0 (skipped). Usage: gpu_proof [TESTS_DIR];
 * gpu_proof --probe exits 0 when there is a CUDA device, 3 when there is none. */
#include "common/card.h"
#include "common/config.h"
#include "common/error.h"
#include "diar/pipeline.h"
#include "diar/io/rttm.h"
#include "diar/backend_gpu.h"
#include "diar/kernel_plan.h"
#include "route/plan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok)
        failures++;
}

static void check_lock(void)
{
    const char *path = getenv("GPUFLOCK_LOCK_FILE");
    check(path != NULL, "GPUFLOCK_LOCK_FILE is set (run through gpuflock exec --proof)");
    if (!path)
        return;
    /* GPUFLOCK_LOCK_FILE may list several cards, comma-separated: the first. */
    char first[4096];
    snprintf(first, sizeof first, "%s", path);
    char *comma = strchr(first, ',');
    if (comma)
        *comma = '\0';
    int fd = open(first, O_RDONLY | O_CLOEXEC);
    check(fd >= 0, "the card's lock file opens");
    if (fd < 0)
        return;
    int r = flock(fd, LOCK_EX | LOCK_NB);
    check(r != 0 && errno == EWOULDBLOCK,
          "a fresh open + non-blocking try reports 'would block': the card is locked");
    close(fd);
}

static void check_scrubbed(const gf_config *cfg)
{
    for (size_t i = 0; i < cfg->n_scrub_env; i++) {
        char what[256];
        snprintf(what, sizeof what, "%s is absent from the environment", cfg->scrub_env[i]);
        check(getenv(cfg->scrub_env[i]) == NULL, what);
    }
}

/* The card's route plan, made as its worker makes it (diar/kernel_plan.h):
 * the one the pipeline check below applies. */
static void print_plan(const gf_route_plan *plan)
{
    check(gf_route_plan_problem(plan) == NULL, "the evidence tables validate");
    size_t n = gf_route_plan_count(plan), own = 0;
    for (size_t i = 0; i < gf_boundary_count(); i++)
        for (size_t j = 0; j < GF_N_PRODUCTION_BATCHES; j++)
            for (int m = 0; m < GF_N_MATH; m++) {
                gf_route r;
                if (gf_route_plan_get(plan, gf_boundary_at(i)->name, gf_production_batches()[j],
                                      (gf_math)m, &r) != 0 || r.kind != GF_ROUTE_OWN)
                    continue;
                own++;
                printf("     own: %s batch %d %s (%s)\n", r.boundary, r.batch,
                       gf_math_name(r.math), r.detail);
            }
    printf("     plan: %zu routes, %zu own, the rest library\n", n, own);
}

/* The whole pipeline on the CPU and on the GPU, with its stages overlapped
 * on two streams and one after the other (worker.overlap), same recording
 * and weights (GF_TEST_MODELS: segmentation, embedding and plda/;
 * GF_PROOF_AUDIO: a recording): identical speaker turns (times to the
 * microsecond, labels). */
static void check_pipeline(gf_route_plan *plan)
{
    const char *models = getenv("GF_TEST_MODELS"), *audio = getenv("GF_PROOF_AUDIO");
    if (!models || !audio) {
        printf("skip whole-pipeline check: GF_TEST_MODELS and GF_PROOF_AUDIO not both set\n");
        return;
    }
    static const char *const runs[3] = { "CPU", "GPU, stages overlapped", "GPU, stages in turn" };
    gf_diar_result r[3];
    memset(r, 0, sizeof r);
    int ok = 1;
    for (int run = 0; run < 3 && ok; run++) {
        bool wf = false;
        gf_diar *d = gf_diar_new(models, 32, 0, &wf);
        ok = d && !wf;
        if (ok && run > 0) {
            gf_diar_backend be;
            ok = plan && gf_diar_backend_gpu(plan, models, 32, GF_MATH_FP32, run == 1, &be) == 0;
            if (ok)
                gf_diar_set_backend(d, &be);
        }
        gf_diar_run_opts opts = gf_diar_run_defaults();
        ok = ok && gf_diar_run(d, audio, &opts, NULL, &r[run]) == 0;
        gf_diar_destroy(&d);
    }
    check(ok, "the pipeline runs on the CPU and on the GPU (neural, fp32)");
    for (int run = 1; ok && run < 3; run++) {
        const gf_rttm *a = r[0].rttm, *b = r[run].rttm;
        int same = a->n == b->n;
        for (size_t i = 0; same && i < a->n; i++)
            same = fabs(a->turns[i].start - b->turns[i].start) < 1e-6 &&
                   fabs(a->turns[i].duration - b->turns[i].duration) < 1e-6 &&
                   strcmp(a->turns[i].speaker, b->turns[i].speaker) == 0;
        char what[200];
        snprintf(what, sizeof what, "%s and CPU give identical speaker turns (%zu and %zu turns)",
                 runs[run], b->n, a->n);
        check(same, what);
    }
    for (int run = 0; run < 3; run++)
        gf_diar_result_free(&r[run]);
}

static void run_gpu_checks(const char *dir)
{
    DIR *d = opendir(dir);
    check(d != NULL, "the GPU check programs are built");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "test_gpu_", 9) != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            setenv("CMOCKA_MESSAGE_OUTPUT", "stdout", 1);
            execl(path, path, (char *)NULL);
            _exit(127);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        char what[4200];
        snprintf(what, sizeof what, "%s (kernels and routes against the CPU references)",
                 e->d_name);
        check(WIFEXITED(st) && WEXITSTATUS(st) == 0, what);
    }
    closedir(d);
}

int main(int argc, char **argv)
{
    int count = 0;
    gf_card_cuda_count(&count);
    if (argc > 1 && strcmp(argv[1], "--probe") == 0)
        return count > 0 ? 0 : 3;   /* for the Makefile: is there a card to prove on? */
    const char *tests = argc > 1 ? argv[1] : "build/tests/gpu";
    if (count == 0) {
        printf("gpu-proof: no CUDA device on this machine: the GPU proof suite is skipped\n");
        return 0;
    }
    gf_config *cfg = NULL;
    if (gf_config_load(NULL, &cfg) != 0)
        return GF_EXIT_CONFIG;
    check_lock();
    check_scrubbed(cfg);
    const char *dev = getenv("GPUFLOCK_DEVICE");
    int index = dev ? atoi(dev) : 0;
    gf_device_conf conf = { .index = 0, .kind = GF_DEVICE_CUDA, .lock = NULL, .shared_slots = 1 };
    /* CUDA_VISIBLE_DEVICES names only our card: ordinal 0 inside the job. */
    gf_card_identity card;
    int rc = gf_card_identify(&conf, &card);
    check(rc == 0, "the card is identified through the driver");
    gf_route_plan *plan = rc == 0 ? gf_kernel_plan_new(&card) : NULL;   /* on ordinal 0 */
    check(rc != 0 || plan != NULL, "the route plan is made");
    if (rc == 0) {
        gf_card_identity shown = card;
        shown.index = index;
        char *text = gf_card_format(&shown);
        printf("     card %d: %s\n", index, text);
        free(text);
    }
    if (plan)
        print_plan(plan);
    run_gpu_checks(tests);
    check_pipeline(plan);
    gf_route_plan_destroy(&plan);
    gf_config_destroy(&cfg);
    printf("gpu-proof: %s (%d failure%s)\n", failures ? "FAILED" : "passed", failures,
           failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
