/* test_ckpt.c — checkpoint files (diar/ckpt.h): a state written and
 * read back is the same bit for bit (NaN included) with the same identity,
 * in both modes, also through a reused image, and a capture into the last
 * image copies only the windows since; every kind of damage is refused with its reason and
 * nothing is allocated from a count before it is checked (truncated at
 * every length, bad magic, another format or byte order, a flipped bit,
 * trailing bytes, absurd counts and identities under a digest that matches,
 * a symlink, a directory, a FIFO, another owner, a sparse 8 GiB file); each
 * identity field that changes is named, with its old and new value; a
 * write that fails (the file-size limit, a real EFBIG) leaves the previous
 * checkpoint whole and no temporary file; a stale temporary symlink is
 * replaced, not followed; removal takes the file and its temporary. */
#include "common/error.h"
#include "common/sha256.h"
#include "common/util.h"
#include "tmpdir.h"
#include "diar/ckpt.h"
#include "diar/weightfree.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static int setup(void **state)
{
    (void)state;
    return gf_test_mkdtemp(dir, sizeof dir, "gf_ckpt_test");
}

static int teardown(void **state)
{
    (void)state;
    return gf_test_rmtree(dir);
}

static char *in_dir(const char *name)
{
    return gf_strfmt("%s/%s", dir, name);
}

/* Arrays of a state that owns them. */
typedef struct {
    gf_diar_state st;
    float *seg, *emb, *logits, *blocks, *vad_flags;
} owned;

#define NO_VAD ((size_t)-1)   /* make_state_vad: the energy VAD's state only */

static float *random_floats(size_t n, uint64_t *seed)
{
    float *p = gf_malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = gf_rand_sym(seed, 10.0f);
    return p;
}

/* k windows of a neural run (with logits when asked), or of a weight-free
 * one with n_blocks blocks and, unless vad_chunks is NO_VAD, the trained
 * VAD's state after vad_chunks chunks; some NaN where a run puts them. */
static owned make_state_vad(size_t k, bool weight_free, bool logits, size_t n_blocks,
                            size_t vad_chunks)
{
    uint64_t seed = 42 + k;
    owned o;
    memset(&o, 0, sizeof o);
    size_t dim = weight_free ? GF_DIAR_WF_DIM : GF_DIAR_EMB_DIM;
    o.seg = random_floats(k * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS, &seed);
    if (!weight_free) {
        o.emb = random_floats(k * GF_DIAR_SPEAKERS * dim, &seed);
        for (size_t i = 0; i < dim; i++)
            o.emb[GF_DIAR_SPEAKERS * dim + i] = NAN;   /* window 1, speaker 0 inactive */
    }
    if (logits)
        o.logits = random_floats(k * GF_DIAR_FRAMES * GF_DIAR_CLASSES, &seed);
    if (n_blocks) {
        o.blocks = random_floats(n_blocks * GF_DIAR_WF_DIM, &seed);
        o.blocks[0] = NAN;
    }
    o.st = (gf_diar_state){ .n_windows = k, .dim = dim, .weight_free = weight_free,
                            .seg = o.seg, .emb = o.emb, .logits = o.logits,
                            .noise_db = weight_free ? -47.25 : NAN, .n_blocks = n_blocks,
                            .blocks = o.blocks };
    if (weight_free && vad_chunks != NO_VAD) {
        o.st.trained_vad = true;
        for (int l = 0; l < GF_VAD_LAYERS; l++)
            for (int i = 0; i < GF_VAD_HIDDEN; i++) {
                o.st.vad_state.h[l][i] = gf_rand_sym(&seed, 1.0f);
                o.st.vad_state.c[l][i] = gf_rand_sym(&seed, 3.0f);
            }
        o.vad_flags = gf_malloc((vad_chunks ? vad_chunks : 1) * sizeof *o.vad_flags);
        for (size_t j = 0; j < vad_chunks; j++)
            o.vad_flags[j] = (float)((j / 7) % 2);
        o.st.vad_chunks = vad_chunks;
        o.st.vad_flags = vad_chunks ? o.vad_flags : NULL;
    }
    return o;
}

static owned make_state(size_t k, bool weight_free, bool logits, size_t n_blocks)
{
    return make_state_vad(k, weight_free, logits, n_blocks, NO_VAD);
}

static void free_state(owned *o)
{
    free(o->seg);
    free(o->emb);
    free(o->logits);
    free(o->blocks);
    free(o->vad_flags);
}

static gf_ckpt_id make_id(void)
{
    gf_ckpt_id id;
    memset(&id, 0, sizeof id);
    for (int f = 0; f < GF_CKPT_N_FIELDS; f++)
        gf_ckpt_id_set(&id, f, "value of %s", gf_ckpt_field_key(f));
    gf_ckpt_id_set(&id, GF_CKPT_BATCH, "32");
    gf_ckpt_id_set(&id, GF_CKPT_AUDIO_SHA256, "%s",
                   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    return id;
}

static void same_floats(const float *a, const float *b, size_t n)
{
    assert_true((a == NULL) == (b == NULL));
    if (a)
        assert_memory_equal(a, b, n * sizeof *a);
}

static void same_state(const gf_diar_state *a, const gf_diar_state *b)
{
    assert_int_equal(a->n_windows, b->n_windows);
    assert_int_equal(a->dim, b->dim);
    assert_int_equal(a->weight_free, b->weight_free);
    assert_int_equal(a->n_blocks, b->n_blocks);
    assert_memory_equal(&a->noise_db, &b->noise_db, sizeof a->noise_db);   /* bits, NaN too */
    size_t k = a->n_windows;
    same_floats(a->seg, b->seg, k * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS);
    same_floats(a->emb, b->emb, k * GF_DIAR_SPEAKERS * a->dim);
    same_floats(a->logits, b->logits, k * GF_DIAR_FRAMES * GF_DIAR_CLASSES);
    same_floats(a->blocks, b->blocks, a->n_blocks * GF_DIAR_WF_DIM);
    assert_int_equal(a->trained_vad, b->trained_vad);
    assert_int_equal(a->vad_chunks, b->vad_chunks);
    if (a->trained_vad)
        assert_memory_equal(&a->vad_state, &b->vad_state, sizeof a->vad_state);
    same_floats(a->vad_flags, b->vad_flags, a->vad_chunks);
}

/* Write st under id to name; its image in *img (the caller frees). */
static char *write_ckpt(const char *name, const gf_ckpt_id *id, const gf_diar_state *st,
                        unsigned char **img, size_t *len)
{
    char *path = in_dir(name);
    uint64_t wns = 0, fns = 0;
    gf_ckpt_copied cp;
    gf_ckpt *c = gf_ckpt_capture(id, st, NULL, &cp);
    assert_true(cp.copies >= 1);
    assert_int_equal(cp.windows, st->n_windows);
    char why[512];
    assert_int_equal(gf_ckpt_write(c, path, (uid_t)-1, (gid_t)-1, &wns, &fns, why, sizeof why), 0);
    assert_string_equal(why, "");
    if (img) {
        const void *p = gf_ckpt_image(c, len);
        *img = gf_malloc(*len);
        memcpy(*img, p, *len);
    }
    gf_ckpt_destroy(&c);
    return path;
}

static void round_trip(bool weight_free, bool logits, size_t k, size_t n_blocks, size_t vad)
{
    owned o = make_state_vad(k, weight_free, logits, n_blocks, vad);
    gf_ckpt_id id = make_id();
    char *path = write_ckpt(weight_free ? "wf.ckpt" : "nn.ckpt", &id, &o.st, NULL, NULL);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0600);
    char *tmp = gf_strfmt("%s.tmp", path);
    assert_int_not_equal(access(tmp, F_OK), 0);
    gf_ckpt *c = NULL;
    char why[512];
    assert_int_equal(gf_ckpt_read(path, getuid(), k, &c, why, sizeof why), 0);
    assert_int_equal(gf_ckpt_bytes(c), (size_t)sb.st_size);
    char diff[1024];
    assert_int_equal(gf_ckpt_id_diff(gf_ckpt_identity(c), &id, diff, sizeof diff), 0);
    assert_string_equal(diff, "");
    same_state(gf_ckpt_state(c), &o.st);
    gf_ckpt_destroy(&c);
    gf_ckpt_destroy(&c);   /* safe twice */
    free(tmp);
    free(path);
    free_state(&o);
}

static void test_round_trip(void **state)
{
    (void)state;
    round_trip(false, true, 8, 0, NO_VAD);
    round_trip(false, false, 32, 0, NO_VAD);
    round_trip(true, false, 5, gf_diar_max_blocks(5), NO_VAD);
    round_trip(true, false, 1, 3, NO_VAD);
    round_trip(true, false, 5, gf_diar_max_blocks(5), gf_diar_max_vad_chunks(5));
    round_trip(true, false, 3, 2, 0);   /* the trained VAD before its first chunk */
}

/* The capture of a run that goes on, into the image of its last capture:
 * only the windows since are copied, and the image reads back as the whole
 * state (here a state growing from 4 to 9 to 12 windows, blocks and noise
 * floor changing). */
static void test_incremental(void **state)
{
    (void)state;
    gf_ckpt_id id = make_id();
    owned full = make_state_vad(12, true, false, gf_diar_max_blocks(12),
                                gf_diar_max_vad_chunks(12));
    gf_ckpt *img = NULL;
    const size_t ks[] = { 4, 9, 9, 12 };
    size_t before = 0;
    for (size_t i = 0; i < GF_ARRAY_LEN(ks); i++) {
        gf_diar_state st = full.st;
        st.n_windows = ks[i];
        st.n_blocks = gf_diar_max_blocks(ks[i]);
        st.vad_chunks = gf_diar_max_vad_chunks(ks[i]) - i;
        st.vad_state.h[1][5] = (float)i;
        st.noise_db = -60.0 + (double)i;
        gf_ckpt_copied cp;
        img = gf_ckpt_capture(&id, &st, img, &cp);
        assert_int_equal(cp.windows, ks[i] - before);
        before = ks[i];
        size_t len;
        const void *p = gf_ckpt_image(img, &len);
        gf_ckpt *back = NULL;
        char why[256];
        assert_int_equal(gf_ckpt_decode(p, len, 12, &back, why, sizeof why), 0);
        same_state(gf_ckpt_state(back), &st);
        gf_ckpt_destroy(&back);
    }
    /* another identity: everything copied again */
    gf_ckpt_id other = id;
    gf_ckpt_id_set(&other, GF_CKPT_BATCH, "16");
    gf_ckpt_copied cp;
    img = gf_ckpt_capture(&other, &full.st, img, &cp);
    assert_int_equal(cp.windows, 12);
    gf_ckpt_destroy(&img);
    free_state(&full);
}

/* An image reused for the next capture, smaller then larger, and across
 * modes: each one reads back as its own state (nothing of the last left). */
static void test_reuse(void **state)
{
    (void)state;
    gf_ckpt_id id = make_id();
    owned a = make_state(8, false, true, 0), b = make_state(3, true, false, 7),
          c = make_state(12, false, false, 0);
    gf_ckpt *img = gf_ckpt_capture(&id, &a.st, NULL, NULL);
    const owned *next[] = { &b, &c, &a };
    for (size_t i = 0; i < 3; i++) {
        gf_ckpt_copied cp;
        img = gf_ckpt_capture(&id, &next[i]->st, img, &cp);
        assert_int_equal(cp.windows, next[i]->st.n_windows);   /* another run: all of it */
        size_t len;
        const void *p = gf_ckpt_image(img, &len);
        gf_ckpt *back = NULL;
        char why[256];
        assert_int_equal(gf_ckpt_decode(p, len, 12, &back, why, sizeof why), 0);
        same_state(gf_ckpt_state(back), &next[i]->st);
        gf_ckpt_destroy(&back);
    }
    gf_ckpt_destroy(&img);
    free_state(&a);
    free_state(&b);
    free_state(&c);
}

/* Refused by gf_ckpt_decode with a reason holding `want`. */
static void refused(const unsigned char *buf, size_t len, size_t max_windows, const char *want)
{
    gf_ckpt *c = NULL;
    char why[512];
    int rc = gf_ckpt_decode(buf, len, max_windows, &c, why, sizeof why);
    if (rc != GF_EINVAL || !strstr(why, want))
        fprintf(stderr, "wanted a refusal with '%s', got %d '%s'\n", want, rc, why);
    assert_int_equal(rc, GF_EINVAL);
    assert_null(c);
    assert_non_null(strstr(why, want));
}

/* The digest made right again after a change: so that a check behind the
 * digest is what refuses it. */
static void reseal(unsigned char *buf, size_t len)
{
    char hex[GF_SHA256_HEX_LEN];
    gf_sha256_hex(buf, len - GF_CKPT_DIGEST_BYTES, hex);
    memcpy(buf + len - GF_CKPT_DIGEST_BYTES, hex, GF_CKPT_DIGEST_BYTES);
}

static void test_damage_refused(void **state)
{
    (void)state;
    owned o = make_state(4, false, true, 0);
    gf_ckpt_id id = make_id();
    unsigned char *img;
    size_t len;
    char *path = write_ckpt("good.ckpt", &id, &o.st, &img, &len);
    unsigned char *b = gf_malloc(len + 1);
    gf_ckpt *c = NULL;
    assert_int_equal(gf_ckpt_decode(img, len, 4, &c, (char[64]){ 0 }, 64), 0);
    gf_ckpt_destroy(&c);

    /* cut anywhere: never accepted, never a crash */
    for (size_t n = 0; n < len; n += n < 200 ? 1 : 997) {
        gf_ckpt *t = NULL;
        char why[512];
        assert_int_equal(gf_ckpt_decode(img, n, 4, &t, why, sizeof why), GF_EINVAL);
        assert_true(why[0] != '\0');
    }
    refused(img, len - 1, 4, "truncated");
    refused(img, 0, 4, "not a gpuflock checkpoint");
    memcpy(b, img, len);
    b[len] = 0;
    refused(b, len + 1, 4, "more than its counts say");

    memcpy(b, img, len);
    b[0] = 'X';
    refused(b, len, 4, "bad magic");
    memcpy(b, img, len);
    b[8] = 1;                                  /* the format before the trained VAD */
    refused(b, len, 4, "format 1; this program reads format 2");
    memcpy(b, img, len);
    uint32_t swapped = 0x04030201u;
    memcpy(b + 12, &swapped, 4);
    refused(b, len, 4, "another byte order");

    /* one bit of the results flipped */
    memcpy(b, img, len);
    b[len / 2] ^= 0x10;
    refused(b, len, 4, "SHA-256 does not match");
    /* and of the digest itself */
    memcpy(b, img, len);
    b[len - 1] ^= 0x01;
    refused(b, len, 4, "SHA-256 does not match");

    /* counts checked before anything is sized from them, digest or not */
    memcpy(b, img, len);
    uint64_t huge = (uint64_t)1 << 60;
    memcpy(b + 24, &huge, 8);
    reseal(b, len);
    refused(b, len, 4, "absurd counts");
    refused(img, len, 3, "absurd counts (4 windows; the audio has 3)");
    memcpy(b, img, len);
    uint64_t zero = 0;
    memcpy(b + 24, &zero, 8);
    reseal(b, len);
    refused(b, len, 4, "absurd counts (0 windows");
    memcpy(b, img, len);
    uint64_t dim = 255;
    memcpy(b + 32, &dim, 8);
    reseal(b, len);
    refused(b, len, 4, "absurd contents");
    memcpy(b, img, len);
    uint32_t flags = 0xff;
    memcpy(b + 20, &flags, 4);
    reseal(b, len);
    refused(b, len, 4, "flags 0xff");
    memcpy(b, img, len);
    uint32_t idb = 1u << 30;
    memcpy(b + 16, &idb, 4);
    reseal(b, len);
    refused(b, len, 4, "identity of");
    /* an identity whose key is not the one due there */
    memcpy(b, img, len);
    unsigned char *key = (unsigned char *)memmem(b, len, "batch_size=", 11);
    assert_non_null(key);
    key[0] = 'B';
    reseal(b, len);
    refused(b, len, 4, "no 'batch_size'");
    /* a control byte in a value */
    memcpy(b, img, len);
    key = (unsigned char *)memmem(b, len, "batch_size=32", 13);
    key[11] = 0x07;
    reseal(b, len);
    refused(b, len, 4, "control byte");

    /* weight-free: more blocks than its windows can hold */
    owned w = make_state(2, true, false, gf_diar_max_blocks(2));
    unsigned char *wimg;
    size_t wlen;
    char *wpath = write_ckpt("wf-damage.ckpt", &id, &w.st, &wimg, &wlen);
    unsigned char *wb = gf_malloc(wlen);
    memcpy(wb, wimg, wlen);
    uint64_t nbl = gf_diar_max_blocks(2) + 1;
    memcpy(wb + 40, &nbl, 8);
    reseal(wb, wlen);
    refused(wb, wlen, 2, "statistics blocks");
    /* a VAD chunk count without the trained VAD's flag */
    memcpy(wb, wimg, wlen);
    uint64_t one = 1;
    memcpy(wb + 56, &one, 8);
    reseal(wb, wlen);
    refused(wb, wlen, 2, "VAD chunks");
    free(wb);
    free(wimg);
    free(wpath);
    free_state(&w);

    /* with the trained VAD: more chunks than its windows can hold */
    w = make_state_vad(2, true, false, 3, gf_diar_max_vad_chunks(2));
    wpath = write_ckpt("wf-vad-damage.ckpt", &id, &w.st, &wimg, &wlen);
    wb = gf_malloc(wlen);
    memcpy(wb, wimg, wlen);
    uint64_t nv = gf_diar_max_vad_chunks(2) + 1;
    memcpy(wb + 56, &nv, 8);
    reseal(wb, wlen);
    refused(wb, wlen, 2, "absurd counts (");
    refused(wimg, wlen - 4, 2, "truncated");

    free(wb);
    free(wimg);
    free(wpath);
    free_state(&w);
    free(b);
    free(img);
    free(path);
    free_state(&o);
}

/* What gf_ckpt_read refuses before decoding, by the file itself. */
static void file_refused(const char *path, uid_t owner, const char *want)
{
    gf_ckpt *c = NULL;
    char why[512];
    int rc = gf_ckpt_read(path, owner, 4, &c, why, sizeof why);
    if (rc != GF_EINVAL || !strstr(why, want))
        fprintf(stderr, "%s: wanted a refusal with '%s', got %d '%s'\n", path, want, rc, why);
    assert_int_equal(rc, GF_EINVAL);
    assert_null(c);
}

static void test_files_refused(void **state)
{
    (void)state;
    owned o = make_state(4, false, false, 0);
    gf_ckpt_id id = make_id();
    char *good = write_ckpt("target.ckpt", &id, &o.st, NULL, NULL);
    gf_ckpt *c = NULL;
    char why[512];

    char *none = in_dir("none.ckpt");
    assert_int_equal(gf_ckpt_read(none, (uid_t)-1, 4, &c, why, sizeof why), GF_ENOENT);
    assert_string_equal(why, "");

    char *link = in_dir("link.ckpt");
    assert_int_equal(symlink(good, link), 0);
    file_refused(link, (uid_t)-1, "symbolic link");

    char *d = in_dir("dir.ckpt");
    assert_int_equal(mkdir(d, 0700), 0);
    file_refused(d, (uid_t)-1, "not a regular file");

    char *fifo = in_dir("fifo.ckpt");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    file_refused(fifo, (uid_t)-1, "not a regular file");   /* and it did not block */

    file_refused(good, getuid() + 1, "owned by uid");

    char *empty = in_dir("empty.ckpt");
    int fd = open(empty, O_WRONLY | O_CREAT, 0600);
    close(fd);
    file_refused(empty, (uid_t)-1, "too short");

    /* sparse 8 GiB: refused by its size, never read */
    char *big = in_dir("big.ckpt");
    fd = open(big, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)8 << 30), 0);
    close(fd);
    file_refused(big, (uid_t)-1, "absurd size");

    free(big);
    free(empty);
    free(fifo);
    free(d);
    free(link);
    free(none);
    free(good);
    free_state(&o);
}

static void test_identity_changes(void **state)
{
    (void)state;
    gf_ckpt_id a = make_id(), b = a;
    char why[1024];
    assert_int_equal(gf_ckpt_id_diff(&a, &b, why, sizeof why), 0);
    assert_string_equal(why, "");

    gf_ckpt_id_set(&b, GF_CKPT_BATCH, "16");
    assert_int_equal(gf_ckpt_id_diff(&a, &b, why, sizeof why), 1);
    assert_string_equal(why, "configuration changed (batch size 32 -> 16)");

    b = a;
    gf_ckpt_id_set(&b, GF_CKPT_AUDIO_SHA256, "%s",
                   "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210");
    assert_int_equal(gf_ckpt_id_diff(&a, &b, why, sizeof why), 1);
    assert_string_equal(why, "audio file changed (SHA-256 0123456789ab... -> fedcba987654...)");

    /* each field has its words */
    static const struct { gf_ckpt_field f; const char *words; } cases[] = {
        { GF_CKPT_JOB, "another job's checkpoint (job " },
        { GF_CKPT_PROGRAM, "program changed (" },
        { GF_CKPT_LIBRARIES, "libraries changed (" },
        { GF_CKPT_ROUTE, "route plan changed (" },
        { GF_CKPT_MODE, "configuration changed (mode " },
        { GF_CKPT_MATH, "configuration changed (math mode " },
        { GF_CKPT_OVERLAP, "configuration changed (overlap " },
        { GF_CKPT_LOGITS, "configuration changed (logits " },
        { GF_CKPT_THRESHOLD, "configuration changed (clustering threshold " },
        { GF_CKPT_EXCLUDE_OVERLAP, "configuration changed (embedding_exclude_overlap " },
        { GF_CKPT_STEP, "configuration changed (segmentation_step " },
        { GF_CKPT_NUM_SPEAKERS, "configuration changed (num_speakers " },
        { GF_CKPT_MIN_SPEAKERS, "configuration changed (min_speakers " },
        { GF_CKPT_MAX_SPEAKERS, "configuration changed (max_speakers " },
        { GF_CKPT_SEG_MODEL, "model file changed (segmentation.safetensors " },
        { GF_CKPT_EMB_MODEL, "model file changed (embedding.safetensors " },
        { GF_CKPT_VAD_MODEL, "model file changed (silero_vad.safetensors " },
        { GF_CKPT_AUDIO_SIZE, "audio file changed (size " },
        { GF_CKPT_AUDIO_MTIME, "audio file changed (mtime " },
    };
    for (size_t i = 0; i < GF_ARRAY_LEN(cases); i++) {
        b = a;
        gf_ckpt_id_set(&b, cases[i].f, "other");
        assert_int_equal(gf_ckpt_id_diff(&a, &b, why, sizeof why), 1);
        if (strncmp(why, cases[i].words, strlen(cases[i].words)) != 0)
            fprintf(stderr, "field %s: '%s'\n", gf_ckpt_field_key(cases[i].f), why);
        assert_true(strncmp(why, cases[i].words, strlen(cases[i].words)) == 0);
        assert_non_null(strstr(why, "-> other"));
    }
    assert_int_equal(GF_ARRAY_LEN(cases) + 2, GF_CKPT_N_FIELDS);   /* + batch, audio.sha256 */

    /* several at once, all named; a newline cannot break the file's lines */
    b = a;
    gf_ckpt_id_set(&b, GF_CKPT_AUDIO_SIZE, "12");
    gf_ckpt_id_set(&b, GF_CKPT_BATCH, "8\nmode=x");
    assert_int_equal(gf_ckpt_id_diff(&a, &b, why, sizeof why), 2);
    assert_non_null(strstr(why, "configuration changed (batch size 32 -> 8?mode=x); "
                                "audio file changed (size value of audio.size -> 12 bytes)"));
}

/* A write that fails half way (here the file-size limit: EFBIG, as a full
 * disk gives ENOSPC) leaves the previous checkpoint whole. */
static void test_failed_write_keeps_previous(void **state)
{
    (void)state;
    owned small = make_state(2, false, false, 0);
    owned large = make_state(8, false, false, 0);
    gf_ckpt_id id = make_id();
    char *path = write_ckpt("keep.ckpt", &id, &small.st, NULL, NULL);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 40000;   /* the small one is ~22 KB, the large ~80 KB */
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    gf_ckpt *c = gf_ckpt_capture(&id, &large.st, NULL, NULL);
    char why[512];
    int rc = gf_ckpt_write(c, path, (uid_t)-1, (gid_t)-1, NULL, NULL, why, sizeof why);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);
    assert_int_equal(rc, GF_EIO);
    assert_non_null(strstr(why, "keep.ckpt.tmp: write:"));
    gf_ckpt_destroy(&c);
    char *tmp = gf_strfmt("%s.tmp", path);
    assert_int_not_equal(access(tmp, F_OK), 0);
    assert_int_equal(gf_ckpt_read(path, (uid_t)-1, 8, &c, why, sizeof why), 0);
    same_state(gf_ckpt_state(c), &small.st);
    gf_ckpt_destroy(&c);

    /* a stale temporary file that is a symlink is removed, not written through */
    char *victim = in_dir("victim");
    FILE *f = fopen(victim, "w");
    fputs("untouched\n", f);
    fclose(f);
    assert_int_equal(symlink(victim, tmp), 0);
    free(write_ckpt("keep.ckpt", &id, &large.st, NULL, NULL));
    f = fopen(victim, "r");
    char line[32] = "";
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_string_equal(line, "untouched\n");
    assert_int_equal(gf_ckpt_read(path, (uid_t)-1, 8, &c, why, sizeof why), 0);
    same_state(gf_ckpt_state(c), &large.st);
    gf_ckpt_destroy(&c);

    /* removal takes both, and is fine when there is nothing */
    fclose(fopen(tmp, "w"));
    assert_int_equal(gf_ckpt_remove(path, why, sizeof why), 0);
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_not_equal(access(tmp, F_OK), 0);
    assert_int_equal(gf_ckpt_remove(path, why, sizeof why), 0);
    free(victim);
    free(tmp);
    free(path);
    free_state(&small);
    free_state(&large);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_reuse),
        cmocka_unit_test(test_incremental),
        cmocka_unit_test(test_damage_refused),
        cmocka_unit_test(test_files_refused),
        cmocka_unit_test(test_identity_changes),
        cmocka_unit_test(test_failed_write_keeps_previous),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
