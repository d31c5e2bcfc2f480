/* oracle_speech — the weight-free mode's speaker side with the speech taken
 * from the reference (an oracle VAD), for bench/diarize/ami-weightfree.
 *
 *   oracle_speech REFERENCE.rttm FILE.wav...   RTTM of every file on stdout
 *
 * Each file goes through the weight-free stages as gf_diar_run takes them
 * (10 s windows every 1 s, the plain fbank, gf_diar_wf_add_blocks,
 * gf_diar_wf_local_speakers, gf_cluster_run without PLDA), except that a
 * frame's activity is whether its centre lies in a reference turn of the
 * file's uri (its base name without extension) instead of the energy VAD's
 * answer. The confusion it scores is the speaker side's alone. A benchmark,
 * not a product path: nothing in the pipeline reads the reference.
 *
 * ORACLE_NN=S (a diagnostic of the block statistics, on stderr): per file,
 * how often the nearest other segment of S blocks (leave-one-out, cosine)
 * has the same lone reference speaker, against the largest speaker's
 * share of those segments (what always guessing that speaker gets). */
#include "common/error.h"
#include "common/util.h"
#include "diar/cluster/cluster.h"
#include "diar/cluster/spectral.h"
#include "diar/io/audio.h"
#include "diar/io/audio_windows.h"
#include "diar/io/rttm.h"
#include "diar/pipeline.h"
#include "diar/weightfree.h"
#include "kernels/fbank/fbank_cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the segmentation frame grid in samples (as weightfree.c's) */
#define FRAME_LEN 991
#define FRAME_STEP 270

/* whether second t is inside a turn of uri */
static int speech_at(const gf_rttm *ref, const char *uri, double t)
{
    for (size_t i = 0; i < ref->n; i++)
        if (strcmp(ref->turns[i].uri, uri) == 0 && t >= ref->turns[i].start &&
            t < ref->turns[i].start + ref->turns[i].duration)
            return 1;
    return 0;
}

/* The reference speaker alone in at least 80 % of [t0, t1) (10 ms steps),
 * or -1; speakers are numbered by first appearance in names (*nn of them,
 * at most 16). */
static int lone_speaker(const gf_rttm *ref, const char *uri, double t0, double t1,
                        char names[][64], int *nn)
{
    double cnt[16] = { 0 }, tot = 0.0;
    for (double t = t0; t < t1; t += 0.01) {
        int n_at = 0, s_at = -1;
        for (size_t i = 0; i < ref->n; i++) {
            const gf_turn *r = &ref->turns[i];
            if (strcmp(r->uri, uri) || t < r->start || t >= r->start + r->duration)
                continue;
            int k = 0;
            while (k < *nn && strcmp(names[k], r->speaker))
                k++;
            if (k == *nn && *nn < 16)
                snprintf(names[(*nn)++], 64, "%s", r->speaker);
            n_at++;
            s_at = k;
        }
        tot += 1.0;
        if (n_at == 1 && s_at < 16)
            cnt[s_at] += 1.0;
    }
    int who = -1;
    double best = 0.0;
    for (int k = 0; k < 16; k++)
        if (cnt[k] > best) {
            best = cnt[k];
            who = k;
        }
    return best >= 0.8 * tot ? who : -1;
}

/* Diagnostic: leave-one-out 1-NN speaker accuracy of segments of S blocks
 * (mean of the normalised block vectors) against chance (the largest
 * speaker's share), on stderr. */
static void nn_check(const gf_rttm *ref, const char *uri, const gf_diar_wf_blocks *wb, size_t S)
{
    size_t nb = wb->n, ns = (nb + S - 1) / S, D = GF_DIAR_WF_DIM;
    float *v = gf_malloc((nb ? nb : 1) * D * sizeof *v);
    memcpy(v, wb->vec, nb * D * sizeof *v);
    gf_diar_wf_normalise(v, nb, D);
    double *sv = gf_calloc((ns ? ns : 1) * D, sizeof *sv);
    int *lab = gf_malloc((ns ? ns : 1) * sizeof *lab);
    char names[16][64];
    int nn = 0;
    for (size_t j = 0; j < ns; j++) {
        size_t used = 0;
        for (size_t b = j * S; b < (j + 1) * S && b < nb; b++)
            if (!isnan(v[b * D])) {
                for (size_t d = 0; d < D; d++)
                    sv[j * D + d] += v[b * D + d];
                used++;
            }
        lab[j] = used ? lone_speaker(ref, uri, (double)j * S * GF_DIAR_WF_BLOCK,
                                     (double)(j + 1) * S * GF_DIAR_WF_BLOCK, names, &nn)
                      : -1;
        double norm = 0.0;
        for (size_t d = 0; d < D; d++)
            norm += sv[j * D + d] * sv[j * D + d];
        for (size_t d = 0; d < D; d++)
            sv[j * D + d] /= sqrt(norm) + 1e-12;
    }
    size_t tot = 0, hit = 0, cnt[16] = { 0 };
    for (size_t i = 0; i < ns; i++) {
        if (lab[i] < 0)
            continue;
        double best = -INFINITY;
        int bl = -1;
        for (size_t j = 0; j < ns; j++) {
            if (j == i || lab[j] < 0)
                continue;
            double dot = 0.0;
            for (size_t d = 0; d < D; d++)
                dot += sv[i * D + d] * sv[j * D + d];
            if (dot > best) {
                best = dot;
                bl = lab[j];
            }
        }
        tot++;
        cnt[lab[i]]++;
        hit += bl == lab[i];
    }
    size_t mx = 0;
    for (int k = 0; k < 16; k++)
        mx = cnt[k] > mx ? cnt[k] : mx;
    fprintf(stderr, "nn %s S %zu segs %zu acc %zu chance %zu\n", uri, S, tot, hit, mx);
    free(v);
    free(sv);
    free(lab);
}

static int one_file(const gf_rttm *ref, const gf_fbank *fbank, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char uri[256];
    snprintf(uri, sizeof uri, "%s", base);
    char *dot = strrchr(uri, '.');
    if (dot)
        *dot = '\0';
    int err = 0;
    gf_audio_windows *it = gf_audio_windows_new(path, GF_DIAR_WINDOW, GF_DIAR_STEP, &err);
    if (!it) {
        fprintf(stderr, "oracle_speech: %s: cannot open (%s)\n", path, gf_strerror(err));
        return 1;
    }
    size_t cap = 64, n = 0;
    float *seg = gf_malloc(cap * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS * sizeof *seg);
    float *feats = gf_malloc(GF_DIAR_FBANK_FRAMES * GF_FBANK_BINS * sizeof *feats);
    gf_diar_wf_blocks wb = { .noise_db = NAN };
    const float *win;
    int64_t start;
    size_t valid;
    int rc;
    while ((rc = gf_audio_windows_next(it, &win, &start, &valid)) == 1) {
        if (n == cap) {
            cap *= 2;
            seg = gf_realloc(seg, cap * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS * sizeof *seg);
        }
        float act[GF_DIAR_FRAMES];
        float *s = seg + n * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS;
        for (int f = 0; f < GF_DIAR_FRAMES; f++) {
            size_t a = (size_t)f * FRAME_STEP;
            double t = (double)(start + (int64_t)a + FRAME_LEN / 2) / GF_AUDIO_RATE;
            act[f] = a + FRAME_LEN / 2 < valid ? (float)speech_at(ref, uri, t) : 0.0f;
            s[f * GF_DIAR_SPEAKERS] = act[f];
            s[f * GF_DIAR_SPEAKERS + 1] = s[f * GF_DIAR_SPEAKERS + 2] = 0.0f;
        }
        size_t nf = 0;
        rc = gf_fbank_run(fbank, win, GF_DIAR_WINDOW, feats, &nf, 0);
        if (rc)
            break;
        gf_diar_wf_add_blocks(feats, nf, act, n, valid, &wb);
        n++;
    }
    gf_audio_windows_destroy(&it);
    if (rc < 0 || n == 0) {
        fprintf(stderr, "oracle_speech: %s: %s\n", path, n ? gf_strerror(rc) : "no audio");
        goto out_free;
    }
    if (getenv("ORACLE_NN"))
        nn_check(ref, uri, &wb, (size_t)atoi(getenv("ORACLE_NN")));
    float *emb = gf_malloc(n * GF_DIAR_SPEAKERS * GF_DIAR_WF_DIM * sizeof *emb);
    gf_spectral_opts so = gf_spectral_defaults();
    rc = gf_diar_wf_local_speakers(&wb, seg, emb, n, &so);
    gf_cluster_opts co = gf_cluster_defaults();
    co.threshold = GF_DIAR_WF_SAME;
    co.threads = 1;
    gf_cluster_result cres;
    if (rc == 0)
        rc = gf_cluster_run(seg, emb, n, GF_DIAR_FRAMES, GF_DIAR_SPEAKERS, GF_DIAR_WF_DIM, NULL,
                            &co, &cres);
    free(emb);
    if (rc) {
        fprintf(stderr, "oracle_speech: %s: clustering failed (%s)\n", path, gf_strerror(rc));
        goto out_free;
    }
    for (size_t i = 0; i < cres.n_turns; i++)
        printf("SPEAKER %s 1 %.3f %.3f <NA> <NA> SPEAKER_%02d <NA> <NA>\n", uri,
               cres.turns[i].start, cres.turns[i].end - cres.turns[i].start, cres.turns[i].label);
    gf_cluster_result_free(&cres);
out_free:
    free(seg);
    free(feats);
    free(wb.vec);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: oracle_speech REFERENCE.rttm FILE.wav...\n");
        return 64;
    }
    gf_rttm *ref = NULL;
    if (gf_rttm_read(argv[1], &ref)) {
        fprintf(stderr, "oracle_speech: %s: cannot read\n", argv[1]);
        return 66;
    }
    gf_fbank *fbank = gf_fbank_new();
    int status = 0;
    for (int i = 2; i < argc; i++)
        status |= one_file(ref, fbank, argv[i]);
    gf_fbank_destroy(&fbank);
    gf_rttm_destroy(&ref);
    return status;
}
