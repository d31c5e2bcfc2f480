/* ckpt.c — checkpoint files of diarize jobs (see ckpt.h).
 *
 * The whole file is one buffer in memory: a capture copies the state's
 * arrays into it, the digest is computed when it is written (on the
 * writer's thread, off the pipeline's), and a read checks the fixed header
 * and every count against the audio before it reads the rest, then the
 * digest before it believes any of it. The identity is written and read
 * field by field under the keys of ckpt_id.c's table (gf_ckpt_field_key),
 * so that the two cannot disagree with the comparison. */
#include "diar/ckpt.h"
#include "diar/weightfree.h"

#include "common/error.h"
#include "common/sha256.h"
#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "GFCKPT\r\n"           /* \r\n: a text-mode copy shows at once */
#define BYTE_ORDER_MARK 0x01020304u
#define MAX_ID_BYTES 8192u           /* identity text: 22 fields of < 160 bytes fit */
#define FLAG_EMB 1u                  /* embeddings present (neural mode) */
#define FLAG_LOGITS 2u               /* logits present */
#define FLAG_WF 4u                   /* weight-free mode: blocks, no embeddings */
#define FLAG_VAD 8u                  /* weight-free with the trained VAD: its state, flags */
#define FLAGS_KNOWN (FLAG_EMB | FLAG_LOGITS | FLAG_WF | FLAG_VAD)

struct gf_ckpt {
    unsigned char *buf;   /* the file image (a capture's; NULL once decoded) */
    size_t len;           /* its bytes */
    size_t cap;           /* bytes allocated at buf (a reused image keeps its pages) */
    bool sealed;          /* the digest at its end is in place */
    size_t k_valid;       /* a capture: windows whose records hold that capture's data */
    uint32_t flags;       /* a capture: what its records hold */
    size_t id_bytes;      /* a capture: its identity text's bytes */
    gf_ckpt_id id;        /* the identity (decoded, or as captured) */
    gf_diar_state st;     /* the state: a decoded one's arrays below, a capture's counts */
    float *seg, *emb, *logits, *blocks, *vad_flags;   /* a decoded one's arrays (owned) */
};

/* ---- layout ----------------------------------------------------------- */

/* Window-major: window w's activity, embeddings and logits lie together,
 * so the image of K windows begins as the image of fewer did, and a capture
 * into the last image copies only the windows since (gf_ckpt_capture). */
typedef struct {
    size_t id_bytes;      /* identity text */
    size_t rec_seg;       /* bytes of each part of a window's record */
    size_t rec_emb;
    size_t rec_logits;
    size_t rec;           /* a window's record */
    size_t off_win;       /* offset of window 0's record */
    size_t off_blocks;    /* of the statistics blocks */
    size_t off_vad;       /* of the trained VAD's state, then its chunks' flags */
    size_t off_digest;
    size_t total;         /* file bytes */
} layout;

static bool add_to(size_t *acc, size_t a, size_t b)   /* *acc += a * b, false on overflow */
{
    size_t p;
    return !__builtin_mul_overflow(a, b, &p) && !__builtin_add_overflow(*acc, p, acc);
}

/* Offsets for k windows of dim, n_blocks blocks, n_vad VAD chunks and
 * id_bytes of identity; false when the sizes overflow. */
static bool lay_out(layout *l, size_t id_bytes, uint32_t flags, size_t k, size_t dim,
                    size_t n_blocks, size_t n_vad)
{
    l->id_bytes = id_bytes;
    l->rec_seg = (size_t)GF_DIAR_FRAMES * GF_DIAR_SPEAKERS * sizeof(float);
    l->rec_emb = (flags & FLAG_EMB) ? GF_DIAR_SPEAKERS * dim * sizeof(float) : 0;
    l->rec_logits = (flags & FLAG_LOGITS) ? (size_t)GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof(float)
                                          : 0;
    l->rec = l->rec_seg + l->rec_emb + l->rec_logits;
    size_t at = GF_CKPT_HEADER_BYTES + ((id_bytes + 7) & ~(size_t)7);
    l->off_win = at;
    bool ok = add_to(&at, k, l->rec);
    l->off_blocks = at;
    ok = ok && add_to(&at, n_blocks, GF_DIAR_WF_DIM * sizeof(float));
    l->off_vad = at;
    if (flags & FLAG_VAD)
        ok = ok && add_to(&at, 1, sizeof(gf_vad_state)) && add_to(&at, n_vad, sizeof(float));
    l->off_digest = at;
    ok = ok && add_to(&at, 1, GF_CKPT_DIGEST_BYTES);
    l->total = at;
    return ok;
}

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static char *identity_text(const gf_ckpt_id *id, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f)
        abort();   /* out of memory */
    for (int i = 0; i < GF_CKPT_N_FIELDS; i++)
        fprintf(f, "%s=%s\n", gf_ckpt_field_key((gf_ckpt_field)i), id->v[i]);
    fclose(f);
    return text;
}

gf_ckpt *gf_ckpt_capture(const gf_ckpt_id *id, const gf_diar_state *st, gf_ckpt *reuse,
                         gf_ckpt_copied *copied)
{
    size_t tlen = 0;
    char *text = identity_text(id, &tlen);
    bool vad = st->weight_free && st->trained_vad;
    uint32_t flags = (st->weight_free ? FLAG_WF : FLAG_EMB) | (st->logits ? FLAG_LOGITS : 0)
                     | (vad ? FLAG_VAD : 0);
    size_t k = st->n_windows, nbl = st->weight_free ? st->n_blocks : 0;
    size_t nvad = vad ? st->vad_chunks : 0;
    layout l;
    if (!lay_out(&l, tlen, flags, k, st->dim, nbl, nvad))
        abort();   /* a state in memory always fits size_t */
    /* The windows an earlier capture of the same run put in this image are
     * still right (a window's results never change once it is done): only
     * those since are copied. A fresh buffer of a hundred megabytes costs
     * more in page faults than in copying (1.4 GB/s against ~10 on the H200
     * host): the image grows by half so that the next capture still fits. */
    gf_ckpt *c = reuse ? reuse : gf_calloc(1, sizeof *c);
    bool same = reuse && c->buf && c->flags == flags && c->st.dim == st->dim
                && c->id_bytes == tlen && c->k_valid <= k
                && memcmp(c->buf + GF_CKPT_HEADER_BYTES, text, tlen) == 0;
    size_t from = same ? c->k_valid : 0;
    if (c->cap < l.total) {
        size_t want = c->cap + c->cap / 2;
        c->cap = want > l.total ? want : l.total;
        c->buf = gf_realloc(c->buf, c->cap);
    }
    unsigned char *h = c->buf;
    if (!same) {
        memset(h, 0, l.off_win);   /* header, identity and its padding */
        memcpy(h, MAGIC, 8);
        put32(h + 8, GF_CKPT_FORMAT);
        put32(h + 12, BYTE_ORDER_MARK);
        put32(h + 16, (uint32_t)tlen);
        put32(h + 20, flags);
        put64(h + 32, st->dim);
        memcpy(h + GF_CKPT_HEADER_BYTES, text, tlen);
    }
    free(text);
    put64(h + 24, k);
    put64(h + 40, nbl);
    memcpy(h + 48, &st->noise_db, 8);   /* bits, NaN included */
    put64(h + 56, nvad);
    for (size_t w = from; w < k; w++) {
        unsigned char *r = h + l.off_win + w * l.rec;
        memcpy(r, st->seg + w * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS, l.rec_seg);
        if (l.rec_emb)
            memcpy(r + l.rec_seg, st->emb + w * GF_DIAR_SPEAKERS * st->dim, l.rec_emb);
        if (l.rec_logits)
            memcpy(r + l.rec_seg + l.rec_emb, st->logits + w * GF_DIAR_FRAMES * GF_DIAR_CLASSES,
                   l.rec_logits);
    }
    if (nbl)   /* the blocks follow the windows, so they move: all of them */
        memcpy(h + l.off_blocks, st->blocks, l.off_vad - l.off_blocks);
    if (vad) {   /* and so does the VAD's part after them */
        memcpy(h + l.off_vad, &st->vad_state, sizeof st->vad_state);
        if (nvad)
            memcpy(h + l.off_vad + sizeof st->vad_state, st->vad_flags, nvad * sizeof(float));
    }
    c->len = l.total;
    c->sealed = false;
    c->k_valid = k;
    c->flags = flags;
    c->id_bytes = tlen;
    c->id = *id;
    c->st = (gf_diar_state){ .n_windows = k, .dim = st->dim, .weight_free = st->weight_free,
                             .noise_db = st->noise_db, .n_blocks = nbl,
                             .trained_vad = vad, .vad_state = st->vad_state,
                             .vad_chunks = nvad };
    if (copied)
        *copied = (gf_ckpt_copied){
            .copies = (from < k ? 1 + (l.rec_emb > 0) + (l.rec_logits > 0) : 0) + (nbl > 0)
                      + vad,
            .bytes = (k - from) * l.rec + (l.off_digest - l.off_blocks),
            .windows = k - from,
        };
    return c;
}

size_t gf_ckpt_bytes(const gf_ckpt *self)
{
    return self->len;
}

const void *gf_ckpt_image(gf_ckpt *self, size_t *len)
{
    assert(self->buf);   /* a capture's, not a decoded one's */
    if (!self->sealed) {
        char hex[GF_SHA256_HEX_LEN];
        gf_sha256_hex(self->buf, self->len - GF_CKPT_DIGEST_BYTES, hex);
        memcpy(self->buf + self->len - GF_CKPT_DIGEST_BYTES, hex, GF_CKPT_DIGEST_BYTES);
        self->sealed = true;
    }
    *len = self->len;
    return self->buf;
}

const gf_ckpt_id *gf_ckpt_identity(const gf_ckpt *self)
{
    return &self->id;
}

const gf_diar_state *gf_ckpt_state(const gf_ckpt *self)
{
    return &self->st;
}

void gf_ckpt_destroy(gf_ckpt **self_p)
{
    gf_ckpt *c = self_p ? *self_p : NULL;
    if (!c)
        return;
    free(c->buf);
    free(c->seg);
    free(c->emb);
    free(c->logits);
    free(c->blocks);
    free(c->vad_flags);
    free(c);
    *self_p = NULL;
}

/* ---- reading ---------------------------------------------------------- */

/* The most bytes a checkpoint of max_windows windows can have. */
static size_t max_file_bytes(size_t max_windows)
{
    layout l;
    if (!lay_out(&l, MAX_ID_BYTES, FLAGS_KNOWN, max_windows, GF_DIAR_EMB_DIM,
                 gf_diar_max_blocks(max_windows), gf_diar_max_vad_chunks(max_windows)))
        return SIZE_MAX;
    return l.total;
}

/* Parse the identity text into id; false when a line is not the next
 * field's "key=value". */
static bool parse_identity(const char *text, size_t n, gf_ckpt_id *id, char *why, size_t wlen)
{
    size_t at = 0;
    for (int f = 0; f < GF_CKPT_N_FIELDS; f++) {
        const char *key = gf_ckpt_field_key((gf_ckpt_field)f);
        size_t kl = strlen(key);
        const char *nl = at < n ? memchr(text + at, '\n', n - at) : NULL;
        if (!nl || (size_t)(nl - (text + at)) < kl + 1 || memcmp(text + at, key, kl) != 0
            || text[at + kl] != '=') {
            snprintf(why, wlen, "damaged (its identity has no '%s' where it belongs)", key);
            return false;
        }
        const char *v = text + at + kl + 1;
        size_t vl = (size_t)(nl - v);
        if (vl >= GF_CKPT_VALUE_MAX) {
            snprintf(why, wlen, "damaged (identity field '%s' is %zu bytes long)", key, vl);
            return false;
        }
        for (size_t i = 0; i < vl; i++)
            if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
                snprintf(why, wlen, "damaged (identity field '%s' holds a control byte)", key);
                return false;
            }
        memcpy(id->v[f], v, vl);
        id->v[f][vl] = '\0';
        at = (size_t)(nl - text) + 1;
    }
    if (at != n) {
        snprintf(why, wlen, "damaged (%zu bytes after its identity's last field)", n - at);
        return false;
    }
    return true;
}

/* Decode the image c->buf[0..c->len) in place. */
static int decode(gf_ckpt *c, size_t max_windows, char *why, size_t wlen)
{
    const unsigned char *h = c->buf;
    size_t len = c->len;
    if (len < 8 || memcmp(h, MAGIC, 8) != 0) {
        snprintf(why, wlen, "not a gpuflock checkpoint (%s)", len < 8 ? "too short" : "bad magic");
        return GF_EINVAL;
    }
    if (len < GF_CKPT_HEADER_BYTES + GF_CKPT_DIGEST_BYTES) {
        snprintf(why, wlen, "truncated (%zu bytes, less than a header)", len);
        return GF_EINVAL;
    }
    uint32_t format = get32(h + 8), bom = get32(h + 12), id_bytes = get32(h + 16),
             flags = get32(h + 20);
    uint64_t k = get64(h + 24), dim = get64(h + 32), nbl = get64(h + 40), nvad = get64(h + 56);
    double noise_db;
    memcpy(&noise_db, h + 48, 8);
    if (format != GF_CKPT_FORMAT) {
        snprintf(why, wlen, "format %u; this program reads format %d", (unsigned)format,
                 GF_CKPT_FORMAT);
        return GF_EINVAL;
    }
    if (bom != BYTE_ORDER_MARK) {
        snprintf(why, wlen, "written on a machine of another byte order");
        return GF_EINVAL;
    }
    if (id_bytes == 0 || id_bytes > MAX_ID_BYTES || (flags & ~FLAGS_KNOWN)) {
        snprintf(why, wlen, "damaged (identity of %u bytes, flags 0x%x)", (unsigned)id_bytes,
                 (unsigned)flags);
        return GF_EINVAL;
    }
    bool wf = flags & FLAG_WF;
    bool vad = flags & FLAG_VAD;
    if (wf ? (dim != GF_DIAR_WF_DIM || (flags & (FLAG_EMB | FLAG_LOGITS)))
           : (dim != GF_DIAR_EMB_DIM || !(flags & FLAG_EMB) || nbl != 0 || vad)) {
        snprintf(why, wlen, "absurd contents (%s mode, embedding size %llu, flags 0x%x, %llu "
                 "blocks)", wf ? "weight-free" : "neural", (unsigned long long)dim,
                 (unsigned)flags, (unsigned long long)nbl);
        return GF_EINVAL;
    }
    if (k == 0 || k > max_windows) {
        snprintf(why, wlen, "absurd counts (%llu windows; the audio has %zu)",
                 (unsigned long long)k, max_windows);
        return GF_EINVAL;
    }
    if (nbl > gf_diar_max_blocks((size_t)k)) {
        snprintf(why, wlen, "absurd counts (%llu statistics blocks for %llu windows, at most "
                 "%zu)", (unsigned long long)nbl, (unsigned long long)k,
                 gf_diar_max_blocks((size_t)k));
        return GF_EINVAL;
    }
    if (vad ? nvad > gf_diar_max_vad_chunks((size_t)k) : nvad != 0) {
        snprintf(why, wlen, "absurd counts (%llu VAD chunks for %llu windows, at most %zu)",
                 (unsigned long long)nvad, (unsigned long long)k,
                 vad ? gf_diar_max_vad_chunks((size_t)k) : 0);
        return GF_EINVAL;
    }
    layout l;
    if (!lay_out(&l, id_bytes, flags, (size_t)k, (size_t)dim, (size_t)nbl, (size_t)nvad)) {
        snprintf(why, wlen, "absurd counts (sizes overflow)");
        return GF_EINVAL;
    }
    if (len != l.total) {
        if (len < l.total)
            snprintf(why, wlen, "truncated (%zu of %zu bytes)", len, l.total);
        else
            snprintf(why, wlen, "damaged (%zu bytes more than its counts say)", len - l.total);
        return GF_EINVAL;
    }
    char hex[GF_SHA256_HEX_LEN];
    gf_sha256_hex(h, len - GF_CKPT_DIGEST_BYTES, hex);
    if (memcmp(hex, h + len - GF_CKPT_DIGEST_BYTES, GF_CKPT_DIGEST_BYTES) != 0) {
        snprintf(why, wlen, "damaged (its SHA-256 does not match its contents)");
        return GF_EINVAL;
    }
    for (size_t i = GF_CKPT_HEADER_BYTES + id_bytes; i < l.off_win; i++)
        if (h[i] != 0) {
            snprintf(why, wlen, "damaged (padding after its identity)");
            return GF_EINVAL;
        }
    if (!parse_identity((const char *)h + GF_CKPT_HEADER_BYTES, id_bytes, &c->id, why, wlen))
        return GF_EINVAL;
    /* the arrays the pipeline takes, out of the window-major records; the
     * image goes (a resumed run keeps the state, not both) */
    size_t n = (size_t)k;
    c->seg = gf_malloc(n * l.rec_seg);
    if (l.rec_emb)
        c->emb = gf_malloc(n * l.rec_emb);
    if (l.rec_logits)
        c->logits = gf_malloc(n * l.rec_logits);
    for (size_t w = 0; w < n; w++) {
        const unsigned char *r = h + l.off_win + w * l.rec;
        memcpy((unsigned char *)c->seg + w * l.rec_seg, r, l.rec_seg);
        if (l.rec_emb)
            memcpy((unsigned char *)c->emb + w * l.rec_emb, r + l.rec_seg, l.rec_emb);
        if (l.rec_logits)
            memcpy((unsigned char *)c->logits + w * l.rec_logits, r + l.rec_seg + l.rec_emb,
                   l.rec_logits);
    }
    if (nbl) {
        c->blocks = gf_malloc(l.off_vad - l.off_blocks);
        memcpy(c->blocks, h + l.off_blocks, l.off_vad - l.off_blocks);
    }
    gf_vad_state vst;
    memset(&vst, 0, sizeof vst);
    if (vad) {
        memcpy(&vst, h + l.off_vad, sizeof vst);
        if (nvad) {
            c->vad_flags = gf_malloc((size_t)nvad * sizeof(float));
            memcpy(c->vad_flags, h + l.off_vad + sizeof vst, (size_t)nvad * sizeof(float));
        }
    }
    c->st = (gf_diar_state){ .n_windows = n, .dim = (size_t)dim, .weight_free = wf,
                             .seg = c->seg, .emb = c->emb, .logits = c->logits,
                             .noise_db = noise_db, .n_blocks = (size_t)nbl, .blocks = c->blocks,
                             .trained_vad = vad, .vad_state = vst, .vad_chunks = (size_t)nvad,
                             .vad_flags = c->vad_flags };
    free(c->buf);
    c->buf = NULL;
    c->cap = 0;
    c->sealed = true;
    return 0;
}

int gf_ckpt_decode(const void *buf, size_t len, size_t max_windows, gf_ckpt **out, char *why,
                   size_t wlen)
{
    *out = NULL;
    if (wlen)
        why[0] = '\0';
    gf_ckpt *c = gf_calloc(1, sizeof *c);
    c->buf = gf_malloc(len ? len : 1);
    memcpy(c->buf, buf, len);
    c->len = c->cap = len;
    int rc = decode(c, max_windows, why, wlen);
    if (rc) {
        gf_ckpt_destroy(&c);
        return rc;
    }
    *out = c;
    return 0;
}

int gf_ckpt_open(const char *path, int *fd, char *why, size_t wlen)
{
    if (wlen)
        why[0] = '\0';
    /* O_NONBLOCK: a FIFO put there must not hang the job */
    *fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (*fd >= 0)
        return 0;
    if (errno == ENOENT)
        return GF_ENOENT;
    if (errno == ELOOP) {
        snprintf(why, wlen, "a symbolic link (not followed)");
        return GF_EINVAL;
    }
    snprintf(why, wlen, "cannot open: %s", strerror(errno));
    return GF_EIO;
}

int gf_ckpt_read_fd(int fd, uid_t owner, size_t max_windows, gf_ckpt **out, char *why,
                    size_t wlen)
{
    *out = NULL;
    if (wlen)
        why[0] = '\0';
    int rc = 0;
    gf_ckpt *c = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, wlen, "cannot stat: %s", strerror(errno));
        return GF_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, wlen, "not a regular file");
        return GF_EINVAL;
    }
    if (owner != (uid_t)-1 && st.st_uid != owner) {
        snprintf(why, wlen, "owned by uid %u, not by the job's uid %u", (unsigned)st.st_uid,
                 (unsigned)owner);
        return GF_EINVAL;
    }
    size_t max = max_file_bytes(max_windows);
    if (st.st_size < 0 || (uintmax_t)st.st_size > max) {
        snprintf(why, wlen, "absurd size (%lld bytes; one for this audio has at most %zu)",
                 (long long)st.st_size, max);
        return GF_EINVAL;
    }
    c = gf_calloc(1, sizeof *c);
    c->len = c->cap = (size_t)st.st_size;
    c->buf = gf_malloc(c->len ? c->len : 1);
    size_t got = 0;
    while (got < c->len) {
        ssize_t r = pread(fd, c->buf + got, c->len - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(why, wlen, "read error: %s", strerror(errno));
            rc = GF_EIO;
            goto out_free;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    if (got < c->len) {
        snprintf(why, wlen, "truncated (it shrank to %zu bytes while read)", got);
        rc = GF_EINVAL;
        goto out_free;
    }
    rc = decode(c, max_windows, why, wlen);
    if (rc == 0) {
        *out = c;
        c = NULL;
    }
out_free:
    gf_ckpt_destroy(&c);
    return rc;
}

int gf_ckpt_read(const char *path, uid_t owner, size_t max_windows, gf_ckpt **out, char *why,
                 size_t wlen)
{
    *out = NULL;
    int fd;
    int rc = gf_ckpt_open(path, &fd, why, wlen);
    if (rc)
        return rc;
    rc = gf_ckpt_read_fd(fd, owner, max_windows, out, why, wlen);
    close(fd);
    return rc;
}

/* ---- writing ---------------------------------------------------------- */

/* fsync the folder of path, so that a rename or unlink in it is durable. */
static int sync_folder(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? gf_strfmt("%.*s", (int)(slash == path ? 1 : slash - path), path)
                      : gf_strdup(".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int gf_ckpt_write(gf_ckpt *self, const char *path, uid_t uid, gid_t gid, uint64_t *write_ns,
                  uint64_t *fsync_ns, char *why, size_t len)
{
    if (len)
        why[0] = '\0';
    uint64_t t0 = gf_now_ns();
    size_t n;
    const unsigned char *img = gf_ckpt_image(self, &n);
    char *tmp = gf_strfmt("%s.tmp", path);
    const char *step = "create";
    int fd = -1;
    if (unlink(tmp) != 0 && errno != ENOENT) {
        step = "remove the stale temporary file";
        goto fail;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        goto fail;
    step = "chown";
    if (geteuid() == 0 && uid != (uid_t)-1 && fchown(fd, uid, gid) != 0)
        goto fail;
    step = "chmod";
    if (fchmod(fd, 0600) != 0)
        goto fail;
    step = "write";
    if (write_all(fd, img, n) != 0)
        goto fail;
    uint64_t t1 = gf_now_ns();
    step = "fsync";
    if (fsync(fd) != 0)
        goto fail;
    step = "close";
    int c = close(fd);
    fd = -1;
    if (c != 0)
        goto fail;
    step = "rename";
    if (rename(tmp, path) != 0)
        goto fail;
    free(tmp);
    tmp = NULL;
    step = "fsync the folder";
    int s = sync_folder(path);
    uint64_t t2 = gf_now_ns();
    if (write_ns)
        *write_ns += t1 - t0;
    if (fsync_ns)
        *fsync_ns += t2 - t1;
    if (s != 0) {   /* the new file is in place; only its durability is in doubt */
        snprintf(why, len, "%s: %s: %s", path, step, strerror(errno));
        return GF_EIO;
    }
    return 0;
fail:;
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (tmp)
        unlink(tmp);
    snprintf(why, len, "%s: %s: %s", tmp ? tmp : path, step, strerror(e));
    free(tmp);
    return GF_EIO;
}

int gf_ckpt_remove(const char *path, char *why, size_t len)
{
    if (len)
        why[0] = '\0';
    char *tmp = gf_strfmt("%s.tmp", path);
    int rc = 0;
    bool gone = false;
    const char *names[2] = { path, tmp };
    for (int i = 0; i < 2; i++) {
        if (unlink(names[i]) == 0)
            gone = true;
        else if (errno != ENOENT && rc == 0) {
            snprintf(why, len, "%s: cannot remove: %s", names[i], strerror(errno));
            rc = GF_EIO;
        }
    }
    free(tmp);
    if (gone && sync_folder(path) != 0 && rc == 0) {
        snprintf(why, len, "%s: fsync the folder: %s", path, strerror(errno));
        rc = GF_EIO;
    }
    return rc;
}
