/* test_evidence.c — the evidence validator: each rejection, and what it
 * accepts. Every table is written by the test into a fresh directory, with
 * real records hashed to their names (fixture_evidence.h). */
#include "common/error.h"
#include "route/evidence.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/fixture_evidence.h"

#define ALL_AREAS "fbank, sincnet, segconv, lstm, resnet, pooling, embedding, dense"

/* Load f's directory; return the evidence (valid or not) for inspection. */
static gf_evidence *load(fx_dir *f, int expect_rc)
{
    gf_evidence *ev = gf_evidence_new();
    int rc = gf_evidence_load(ev, f->dir);
    for (size_t i = 0; i < gf_evidence_problem_count(ev); i++)
        printf("    problem: %s\n", gf_evidence_problem(ev, i));
    assert_int_equal(rc, expect_rc);
    return ev;
}

/* Some problem contains all of the given fragments. */
static bool has_problem(const gf_evidence *ev, const char *a, const char *b)
{
    for (size_t i = 0; i < gf_evidence_problem_count(ev); i++) {
        const char *p = gf_evidence_problem(ev, i);
        if (strstr(p, a) && (!b || strstr(p, b)))
            return true;
    }
    return false;
}

/* Write 'bs' as one table, validate, and expect a problem naming 'id' and 'what'. */
static void expect_rejected(const fx_binding *bs, size_t n, const char *precedence,
                            const char *id, const char *what)
{
    fx_dir f;
    fx_init(&f, precedence ? precedence : ALL_AREAS);
    fx_table(&f, "t.yaml", bs, n);
    gf_evidence *ev = load(&f, GF_EINVAL);
    char name[96];
    snprintf(name, sizeof name, "binding '%s'", id);
    assert_true(has_problem(ev, name, what));
    /* Every problem names its file and line. */
    char file[128];
    snprintf(file, sizeof file, "%s/bindings/t.yaml:", f.dir);
    assert_true(has_problem(ev, file, what));
    gf_evidence_destroy(&ev);
    fx_cleanup(&f);
}

static void test_point_binding_is_valid(void **state)
{
    (void)state;
    fx_dir f;
    fx_init(&f, ALL_AREAS);
    fx_binding b = fx_h200_lstm();
    fx_table(&f, "lstm.yaml", &b, 1);
    gf_evidence *ev = load(&f, 0);
    assert_int_equal(gf_evidence_binding_count(ev), 1);
    const gf_binding *got = gf_evidence_binding(ev, 0);
    assert_string_equal(got->id, "lstm-h200");
    assert_int_equal(got->scope.kind, GF_SCOPE_POINT);
    assert_int_equal(got->scope.sms, 132);
    assert_int_equal(got->module.tier, 90);
    assert_true(got->proofs[0].measured);
    assert_int_equal(gf_evidence_precedence(ev, "lstm"), 3);
    gf_evidence_destroy(&ev);
    gf_evidence_destroy(&ev);   /* safe twice */
    fx_cleanup(&f);
}

static void test_many_proofs_on_one_binding(void **state)
{
    (void)state;
    fx_dir f;
    fx_init(&f, ALL_AREAS);
    fx_binding b = fx_h200_lstm();
    const int batches[3] = { 1, 8, 32 };
    const char *maths[2] = { "fp32", "tf32" };
    b.n_proofs = 0;
    for (int i = 0; i < 3; i++)
        for (int m = 0; m < 2; m++)
            b.proofs[b.n_proofs++] = (fx_proof){ .boundary = "lstm.stack", .batch = batches[i],
                                                 .math = maths[m], .unmeasured = i == 0,
                                                 .value = m ? "64" : "128" };
    fx_table(&f, "lstm.yaml", &b, 1);
    gf_evidence *ev = load(&f, 0);
    assert_int_equal(gf_evidence_binding(ev, 0)->n_proofs, 6);
    gf_evidence_destroy(&ev);
    fx_cleanup(&f);
}

static void test_broad_and_capability_bindings_are_valid(void **state)
{
    (void)state;
    fx_dir f;
    fx_init(&f, ALL_AREAS);
    fx_binding bs[3] = {
        { .id = "dense-all", .kind = "all-devices", .archs = { 80, 90 }, .n_archs = 2,
          .area = "dense", .tier = "sm80", .sha = FX_SHA_A,
          .proofs = { { .boundary = "dense.linear0" }, { .boundary = "embedding.seg_1" } },
          .n_proofs = 2 },
        { .id = "resnet-cc90-cubin", .kind = "capability", .name = "NVIDIA H100 80GB HBM3",
          .cc = "9.0", .sms = 132, .area = "resnet", .tier = "sm90", .artifact = "cubin",
          .arch = "sm90", .sha = FX_SHA_B,
          .proofs = { { .boundary = "resnet.layer2.1.conv1", .batch = 8 } }, .n_proofs = 1 },
        /* The same module on a narrower, overlapping scope is no conflict. */
        { .id = "resnet-h200", .kind = "point", .name = "NVIDIA H200", .cc = "9.0", .sms = 132,
          .area = "resnet", .tier = "sm90", .artifact = "cubin", .arch = "sm90", .sha = FX_SHA_B,
          .proofs = { { .boundary = "resnet.conv1" } }, .n_proofs = 1 },
    };
    fx_table(&f, "broad.yaml", bs, 3);
    gf_evidence *ev = load(&f, 0);
    assert_int_equal(gf_evidence_binding_count(ev), 3);
    gf_evidence_destroy(&ev);
    fx_cleanup(&f);
}

static void test_the_project_evidence_is_valid(void **state)
{
    (void)state;
    gf_evidence *ev = NULL;
    assert_int_equal(gf_evidence_open("evidence", &ev), 0);
    assert_true(gf_evidence_precedence(ev, "dense") >= 0);
    gf_evidence_destroy(&ev);
    assert_int_equal(gf_evidence_open("no/such/evidence", &ev), GF_ENOENT);
    assert_null(ev);
}

static void test_two_modules_on_overlapping_scopes(void **state)
{
    (void)state;
    fx_binding bs[2] = { fx_h200_lstm(), fx_h200_lstm() };
    bs[1].id = "lstm-cc90";
    bs[1].kind = "capability";
    bs[1].sha = FX_SHA_B;
    expect_rejected(bs, 2, NULL, "lstm-cc90", "two different modules for area lstm");
    /* Two point scopes for different cards do not overlap. */
    bs[1].kind = "point";
    bs[1].sms = 114;
    bs[1].name = "NVIDIA H100 PCIe";
    fx_dir f;
    fx_init(&f, ALL_AREAS);
    fx_table(&f, "t.yaml", bs, 2);
    gf_evidence *ev = load(&f, 0);
    gf_evidence_destroy(&ev);
    fx_cleanup(&f);
}

static void test_duplicated_proof(void **state)
{
    (void)state;
    fx_binding b = fx_h200_lstm();
    b.proofs[1] = (fx_proof){ .boundary = "lstm.stack", .value = "64" };
    b.n_proofs = 2;
    expect_rejected(&b, 1, NULL, "lstm-h200", "duplicated proof of (lstm.stack, 32, fp32)");
}

static void test_config_of_another_area(void **state)
{
    (void)state;
    fx_binding b = fx_h200_lstm();
    b.proofs[0].key = "tile_m";
    expect_rejected(&b, 1, NULL, "lstm-h200", "'tile_m' belongs to area dense");
    b.proofs[0].key = "no_such_knob";
    expect_rejected(&b, 1, NULL, "lstm-h200", "no configuration of any area");
}

static void test_batch_outside_production(void **state)
{
    (void)state;
    fx_binding b = fx_h200_lstm();
    b.proofs[0].batch = 16;
    expect_rejected(&b, 1, NULL, "lstm-h200", "batch 16 is outside the production batches");
}

static void test_proof_with_no_entries(void **state)
{
    (void)state;
    static const char *const tables[] = {
        "bindings:\n  - id: empty-proof\n    scope: {kind: capability, cc: \"9.0\"}\n"
        "    module: {area: lstm, tier: sm90, artifact: {kind: ptx-jit, sha256: " FX_SHA_A "}}\n"
        "    proofs:\n      - {}\n",
        "bindings:\n  - id: empty-proof\n    scope: {kind: capability, cc: \"9.0\"}\n"
        "    module: {area: lstm, tier: sm90, artifact: {kind: ptx-jit, sha256: " FX_SHA_A "}}\n"
        "    proofs: []\n",
    };
    for (size_t i = 0; i < 2; i++) {
        fx_dir f;
        fx_init(&f, ALL_AREAS);
        fx_write(&f, "bindings/t.yaml", tables[i]);
        gf_evidence *ev = load(&f, GF_EINVAL);
        assert_true(has_problem(ev, "binding 'empty-proof'", "no entries"));
        assert_true(has_problem(ev, "t.yaml:", "no entries"));
        gf_evidence_destroy(&ev);
        fx_cleanup(&f);
    }
}

static void test_speed_scope_not_the_bindings(void **state)
{
    (void)state;
    fx_binding b = fx_h200_lstm();
    b.speed_scope = "{kind: point, cc: \"9.0\", sms: 114, name: \"NVIDIA H100 PCIe\"}";
    expect_rejected(&b, 1, NULL, "lstm-h200", "is not the binding's scope");
    b.kind = "capability";
    b.speed_scope = "{kind: capability, cc: \"8.0\"}";
    expect_rejected(&b, 1, NULL, "lstm-h200", "is not the binding's scope");
}

static void test_point_backed_by_capability_evidence(void **state)
{
    (void)state;
    fx_binding b = fx_h200_lstm();
    b.speed_scope = "{kind: capability, cc: \"9.0\"}";
    expect_rejected(&b, 1, NULL, "lstm-h200", "backed only by capability-wide evidence");
}

static void test_point_speed_record_of_another_card(void **state)
{
    (void)state;
    fx_binding b = fx_h200_lstm();
    b.record_card = "NVIDIA H100 80GB HBM3:9.0:132";
    expect_rejected(&b, 1, NULL, "lstm-h200", "speed record names card NVIDIA H100 80GB HBM3");
    b.record_card = "NVIDIA H200:9.0:140";
    expect_rejected(&b, 1, NULL, "lstm-h200", "not in the binding's scope");
}

static void test_cubin_of_another_arch(void **state)
{
    (void)state;
    fx_binding b = fx_h200_lstm();
    b.kind = "capability";
    b.artifact = "cubin";
    b.arch = "sm80";
    b.tier = "sm80";
    expect_rejected(&b, 1, NULL, "lstm-h200", "cubin for sm80, but the scope is cc 9.0");
}

static void test_all_devices_with_cubin(void **state)
{
    (void)state;
    fx_binding b = { .id = "dense-all", .kind = "all-devices", .archs = { 80, 90 }, .n_archs = 2,
                     .area = "dense", .tier = "sm80", .artifact = "cubin", .arch = "sm80",
                     .sha = FX_SHA_A, .proofs = { { .boundary = "dense.linear1" } }, .n_proofs = 1 };
    expect_rejected(&b, 1, NULL, "dense-all", "all-devices scope with a cubin");
}

static void test_weak_or_single_architecture_broad_evidence(void **state)
{
    (void)state;
    fx_binding b = { .id = "dense-all", .kind = "all-devices", .archs = { 80, 90 }, .n_archs = 2,
                     .claim = 1.02, .area = "dense", .tier = "sm80", .sha = FX_SHA_A,
                     .proofs = { { .boundary = "dense.linear1", .speedup = 1.03 } }, .n_proofs = 1 };
    expect_rejected(&b, 1, NULL, "dense-all", "weak evidence on sm80");
    b.claim = 1.2;
    b.archs[0] = 90;
    b.n_archs = 1;
    b.proofs[0].speedup = 1.5;
    expect_rejected(&b, 1, NULL, "dense-all", "backed by a single architecture");
    /* A claim the records do not show. */
    b.archs[0] = 80;
    b.n_archs = 2;
    b.claim = 1.6;
    expect_rejected(&b, 1, NULL, "dense-all", "scope claims 1.60x on sm80");
}

static void test_area_missing_from_precedence(void **state)
{
    (void)state;
    fx_binding b = fx_h200_lstm();
    expect_rejected(&b, 1, "fbank, dense", "lstm-h200", "missing from the route precedence list");
    fx_dir f;
    fx_init(&f, NULL);
    gf_evidence *ev = load(&f, GF_EINVAL);
    assert_true(has_problem(ev, "precedence.yaml", "precedence list is missing"));
    gf_evidence_destroy(&ev);
    fx_cleanup(&f);
}

static void test_records_must_exist_hash_and_agree(void **state)
{
    (void)state;
    /* A record whose bytes changed after it was named. */
    fx_dir f;
    fx_init(&f, ALL_AREAS);
    fx_binding b = fx_h200_lstm();
    fx_table(&f, "t.yaml", &b, 1);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "for r in %s/records/*.json; do echo ' ' >> $r; done", f.dir);
    assert_int_equal(system(cmd), 0);
    gf_evidence *ev = load(&f, GF_EINVAL);
    assert_true(has_problem(ev, "binding 'lstm-h200'", "not to its name"));
    gf_evidence_destroy(&ev);
    /* ...and one that is gone. */
    snprintf(cmd, sizeof cmd, "rm %s/records/*.json", f.dir);
    assert_int_equal(system(cmd), 0);
    ev = load(&f, GF_EINVAL);
    assert_true(has_problem(ev, "binding 'lstm-h200'", "accuracy record"));
    gf_evidence_destroy(&ev);
    fx_cleanup(&f);

    /* A failed accuracy run and a slower kernel are not evidence. */
    b.proofs[0].mismatches = 3;
    expect_rejected(&b, 1, NULL, "lstm-h200", "not a pass");
    b.proofs[0].mismatches = 0;
    b.proofs[0].speedup = 0.9;
    expect_rejected(&b, 1, NULL, "lstm-h200", "shows no speedup");
    b.proofs[0].speedup = 0;
    /* The pipeline slower in every run with the kernel is no evidence;
     * slower by its median but inside the runs' spread is. */
    b.proofs[0].e2e_ratio = 1.02;
    expect_rejected(&b, 1, NULL, "lstm-h200", "pipeline is slower");
    b.proofs[0].e2e_ratio = 1.004;
    fx_dir g;
    fx_init(&g, ALL_AREAS);
    fx_table(&g, "t.yaml", &b, 1);
    gf_evidence *ok = load(&g, 0);
    gf_evidence_destroy(&ok);
    fx_cleanup(&g);
}

static void test_malformed_tables(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *what;
    } cases[] = {
        { "bindings:\n  - id: x\n    scope: [\n", "YAML" },
        /* the configuration's reader (common/ydoc.c): one document, bounded nesting */
        { "bindings: []\n---\nbindings: []\n", "YAML: more than one document" },
        { "bindings: " "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n",
          "YAML: nesting deeper than 64 levels" },
        { "bindings:\n  - id: typo\n    scope: {kind: point, cc: \"9.0\", sms: 132, name: X}\n"
          "    modul: {}\n    proofs: []\n", "unknown key 'modul'" },
        { "bindings:\n  - id: badarea\n    scope: {kind: capability, cc: \"9.0\"}\n"
          "    module: {area: gemm, tier: sm90, artifact: {kind: ptx-jit, sha256: " FX_SHA_A "}}\n"
          "    proofs: []\n", "area 'gemm' unknown" },
        { "bindings:\n  - id: badsha\n    scope: {kind: capability, cc: \"9.0\"}\n"
          "    module: {area: lstm, tier: sm90, artifact: {kind: ptx-jit, sha256: 1234}}\n"
          "    proofs: []\n", "SHA-256" },
        { "bindings:\n  - id: foreign\n    scope: {kind: capability, cc: \"9.0\"}\n"
          "    module: {area: lstm, tier: sm90, artifact: {kind: ptx-jit, sha256: " FX_SHA_A "}}\n"
          "    proofs:\n      - {boundary: resnet.conv1, batch: 32, math: fp32, config: {threads: 1},"
          " accuracy: " FX_SHA_A ", speed: unmeasured}\n", "cannot run it" },
        { "bindings:\n  - id: hightier\n    scope: {kind: capability, cc: \"8.0\"}\n"
          "    module: {area: lstm, tier: sm90, artifact: {kind: ptx-jit, sha256: " FX_SHA_A "}}\n"
          "    proofs: []\n", "cannot load on cc 8.0" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fx_dir f;
        fx_init(&f, ALL_AREAS);
        fx_write(&f, "bindings/t.yaml", cases[i].text);
        gf_evidence *ev = load(&f, GF_EINVAL);
        assert_true(has_problem(ev, "t.yaml:", cases[i].what));
        gf_evidence_destroy(&ev);
        fx_cleanup(&f);
    }
    /* A table under another suffix would be skipped: it is an error instead. */
    fx_dir f;
    fx_init(&f, ALL_AREAS);
    fx_write(&f, "bindings/lstm.yml", "bindings: []\n");
    gf_evidence *ev = load(&f, GF_EINVAL);
    assert_true(has_problem(ev, "lstm.yml", "not a binding table"));
    gf_evidence_destroy(&ev);
    fx_cleanup(&f);
}

/* ---- orphan records ------------------------------------------------------ */

#define FX_SHA_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define FX_SHA_D "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"

/* The usual valid binding, plus every kind of orphan under records/: a record
 * of a module no binding names, an uncited record of the bound module, a
 * record-named file that is no JSON, another file, a folder, and a link
 * named like a record whose target lies outside records/. */
typedef struct {
    fx_dir f;
    char unbound[GF_SHA256_HEX_LEN];   /* of module B, which no binding names */
    char uncited[GF_SHA256_HEX_LEN];   /* of the bound module A, another configuration */
} orphan_fx;

static void orphan_fx_init(orphan_fx *o)
{
    fx_init(&o->f, ALL_AREAS);
    fx_binding b = fx_h200_lstm();
    fx_table(&o->f, "lstm.yaml", &b, 1);
    fx_binding other = fx_h200_lstm();
    other.sha = FX_SHA_B;
    fx_put_record(&o->f, fx_record(&other, &other.proofs[0], "accuracy", FX_H200), o->unbound);
    fx_proof p = { .boundary = "lstm.stack", .value = "64" };
    fx_put_record(&o->f, fx_record(&b, &p, "speed", FX_H200), o->uncited);
    fx_write(&o->f, "records/" FX_SHA_D ".json", "not json\n");
    fx_write(&o->f, "records/notes.txt", "a note\n");
    fx_write(&o->f, "outside.json", "{\"keep\": true}\n");
    char path[256], target[256];
    snprintf(path, sizeof path, "%s/records/sub", o->f.dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(target, sizeof target, "%s/outside.json", o->f.dir);
    snprintf(path, sizeof path, "%s/records/%s.json", o->f.dir, FX_SHA_C);
    assert_int_equal(symlink(target, path), 0);
}

static bool exists(const fx_dir *f, const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", f->dir, rel);
    struct stat st;
    return lstat(path, &st) == 0;
}

static const gf_orphan *find_orphan(const gf_orphan *list, size_t n, const char *sha_or_name)
{
    for (size_t i = 0; i < n; i++)
        if (strncmp(list[i].name, sha_or_name, strlen(sha_or_name)) == 0)
            return &list[i];
    return NULL;
}

/* How many entries records/ holds (hidden ones aside). */
static size_t records_count(const fx_dir *f)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s/records | wc -l", f->dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = 0;
    assert_int_equal(fscanf(p, "%zu", &n), 1);
    pclose(p);
    return n;
}

static void test_orphan_records_are_reported_not_rejected(void **state)
{
    (void)state;
    orphan_fx o;
    orphan_fx_init(&o);
    gf_evidence *ev = load(&o.f, 0);   /* orphans are no problem */
    gf_orphan *list = NULL;
    size_t n = 0;
    assert_int_equal(gf_evidence_orphans(ev, &list, &n), 0);
    assert_int_equal(n, 6);
    for (size_t i = 1; i < n; i++)   /* in name order */
        assert_true(strcmp(list[i - 1].name, list[i].name) < 0);
    const gf_orphan *u = find_orphan(list, n, o.unbound);
    assert_non_null(u);
    assert_int_equal(u->kind, GF_ORPHAN_UNBOUND);
    assert_true(u->removable);
    assert_null(u->why_kept);
    assert_true(u->bytes > 0);
    const gf_orphan *c = find_orphan(list, n, o.uncited);
    assert_non_null(c);
    assert_int_equal(c->kind, GF_ORPHAN_UNCITED);
    assert_true(c->removable);
    const gf_orphan *junk = find_orphan(list, n, FX_SHA_D);
    assert_int_equal(junk->kind, GF_ORPHAN_STRAY);
    assert_true(junk->removable);   /* named like a record, a regular file, cited by nobody */
    const gf_orphan *link = find_orphan(list, n, FX_SHA_C);
    assert_int_equal(link->kind, GF_ORPHAN_STRAY);
    assert_false(link->removable);
    assert_non_null(strstr(link->why_kept, "symbolic link"));
    assert_false(find_orphan(list, n, "notes.txt")->removable);
    assert_string_equal(find_orphan(list, n, "sub")->why_kept, "a folder");
    /* The binding's own three records are cited: not orphans. */
    const gf_proof *p = &gf_evidence_binding(ev, 0)->proofs[0];
    assert_null(find_orphan(list, n, p->accuracy));
    assert_null(find_orphan(list, n, p->speed[0]));
    assert_null(find_orphan(list, n, p->end_to_end));
    gf_evidence_orphans_free(&list, n);
    gf_evidence_orphans_free(&list, n);   /* safe twice */
    assert_null(list);
    gf_evidence_destroy(&ev);
    fx_cleanup(&o.f);
}

static void test_prune_removes_orphans_and_keeps_cited(void **state)
{
    (void)state;
    orphan_fx o;
    orphan_fx_init(&o);
    assert_int_equal(records_count(&o.f), 3 + 6);
    gf_evidence *ev = load(&o.f, 0);
    gf_orphan *list = NULL;
    size_t n = 0;
    assert_int_equal(gf_evidence_orphans(ev, &list, &n), 0);
    size_t removed = 0;
    for (size_t i = 0; i < n; i++) {
        int rc = gf_evidence_orphan_remove(ev, &list[i]);
        assert_int_equal(rc, list[i].removable ? 0 : GF_EINVAL);
        removed += rc == 0;
    }
    assert_int_equal(removed, 3);
    /* Asked to remove the link named like a record anyway: refused, as it is
     * not a regular file (and unlinkat would remove the link, never its
     * target). */
    gf_orphan forced = *find_orphan(list, n, FX_SHA_C);
    forced.removable = true;
    assert_int_equal(gf_evidence_orphan_remove(ev, &forced), GF_EINVAL);
    gf_evidence_orphans_free(&list, n);
    /* A cited record is never removed, even when asked by name. */
    const gf_proof *p = &gf_evidence_binding(ev, 0)->proofs[0];
    char name[96];
    snprintf(name, sizeof name, "%s.json", p->accuracy);
    gf_orphan cited = { .name = name, .kind = GF_ORPHAN_UNCITED, .removable = true };
    assert_int_equal(gf_evidence_orphan_remove(ev, &cited), GF_EINVAL);
    gf_evidence_destroy(&ev);
    /* What is left: the three cited records and what prune does not touch;
     * the link's target outside records/ is intact. */
    assert_int_equal(records_count(&o.f), 3 + 3);
    assert_true(exists(&o.f, "outside.json"));
    assert_true(exists(&o.f, "records/notes.txt"));
    char rel[128];
    snprintf(rel, sizeof rel, "records/%s.json", o.unbound);
    assert_false(exists(&o.f, rel));
    ev = load(&o.f, 0);
    assert_int_equal(gf_evidence_orphans(ev, &list, &n), 0);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++)
        assert_false(list[i].removable);
    gf_evidence_orphans_free(&list, n);
    gf_evidence_destroy(&ev);
    fx_cleanup(&o.f);
}

static void test_prune_follows_no_records_link(void **state)
{
    (void)state;
    /* records/ itself a link to a folder elsewhere: listed, never removed. */
    orphan_fx o;
    orphan_fx_init(&o);
    char real[256], link[256];
    snprintf(real, sizeof real, "%s/real-records", o.f.dir);
    snprintf(link, sizeof link, "%s/records", o.f.dir);
    assert_int_equal(rename(link, real), 0);
    assert_int_equal(symlink(real, link), 0);
    gf_evidence *ev = load(&o.f, 0);   /* the validator reads through it */
    gf_orphan *list = NULL;
    size_t n = 0;
    assert_int_equal(gf_evidence_orphans(ev, &list, &n), 0);
    assert_int_equal(n, 6);
    const gf_orphan *u = find_orphan(list, n, o.unbound);
    assert_false(u->removable);
    assert_string_equal(u->why_kept, "records/ is a symbolic link");
    gf_orphan forced = *u;
    forced.removable = true;
    assert_int_equal(gf_evidence_orphan_remove(ev, &forced), GF_EINVAL);
    gf_evidence_orphans_free(&list, n);
    gf_evidence_destroy(&ev);
    char rel[128];
    snprintf(rel, sizeof rel, "real-records/%s.json", o.unbound);
    assert_true(exists(&o.f, rel));
    fx_cleanup(&o.f);
}

static void test_orphans_of_invalid_tables_are_unknown(void **state)
{
    (void)state;
    orphan_fx o;
    orphan_fx_init(&o);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "sed -i 's/batch: 32/batch: 16/' %s/bindings/lstm.yaml", o.f.dir);
    assert_int_equal(system(cmd), 0);
    gf_evidence *ev = load(&o.f, GF_EINVAL);
    gf_orphan *list = NULL;
    size_t n = 7;
    assert_int_equal(gf_evidence_orphans(ev, &list, &n), GF_ESTATE);
    assert_null(list);
    assert_int_equal(n, 0);
    char name[96];
    snprintf(name, sizeof name, "%s.json", o.unbound);
    gf_orphan u = { .name = name, .kind = GF_ORPHAN_UNBOUND, .removable = true };
    assert_int_equal(gf_evidence_orphan_remove(ev, &u), GF_EINVAL);
    gf_evidence_destroy(&ev);
    assert_int_equal(records_count(&o.f), 3 + 6);
    fx_cleanup(&o.f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_point_binding_is_valid),
        cmocka_unit_test(test_many_proofs_on_one_binding),
        cmocka_unit_test(test_broad_and_capability_bindings_are_valid),
        cmocka_unit_test(test_the_project_evidence_is_valid),
        cmocka_unit_test(test_two_modules_on_overlapping_scopes),
        cmocka_unit_test(test_duplicated_proof),
        cmocka_unit_test(test_config_of_another_area),
        cmocka_unit_test(test_batch_outside_production),
        cmocka_unit_test(test_proof_with_no_entries),
        cmocka_unit_test(test_speed_scope_not_the_bindings),
        cmocka_unit_test(test_point_backed_by_capability_evidence),
        cmocka_unit_test(test_point_speed_record_of_another_card),
        cmocka_unit_test(test_cubin_of_another_arch),
        cmocka_unit_test(test_all_devices_with_cubin),
        cmocka_unit_test(test_weak_or_single_architecture_broad_evidence),
        cmocka_unit_test(test_area_missing_from_precedence),
        cmocka_unit_test(test_records_must_exist_hash_and_agree),
        cmocka_unit_test(test_malformed_tables),
        cmocka_unit_test(test_orphan_records_are_reported_not_rejected),
        cmocka_unit_test(test_prune_removes_orphans_and_keeps_cited),
        cmocka_unit_test(test_prune_follows_no_records_link),
        cmocka_unit_test(test_orphans_of_invalid_tables_are_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
