/* diarout.c — `gpuflock diarize`'s inputs and outputs (see diarout.h). */
#include "cli/diarout.h"

#include "common/djouts.h"
#include "common/error.h"
#include "common/sha256.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    EXIT_USAGE = 64, EXIT_NOINPUT = 66, EXIT_CANTCREAT = 73,
    MAX_DEPTH = 64,      /* -r: deeper folders are said and left out */
    MAX_NAMED = 10,      /* existing outputs named before "and N more" */
};

#define SAY(...) fprintf(stderr, "gpuflock diarize: " __VA_ARGS__)

/* ---- gathering ---------------------------------------------------------- */

typedef struct {
    char *path;      /* as given, or DIR/relative */
    char *name;      /* output name: the stem, or the path below DIR without extension */
    dev_t dev;       /* the file, to find one given twice */
    ino_t ino;
    size_t order;    /* position in the call */
    bool dup;        /* the same file as an earlier input */
} found;

typedef struct {
    found *v;
    size_t n, cap;
} found_list;

static void add(found_list *l, char *path, char *name, const struct stat *st)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = gf_realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n] = (found){ .path = path, .name = name, .dev = st->st_dev, .ino = st->st_ino,
                          .order = l->n };
    l->n++;
}

static bool is_audio_name(const char *name)
{
    static const char *const ext[] = { ".wav", ".flac", ".ogg", ".oga", ".mp3", ".opus",
                                       ".aif", ".aiff", ".au", ".w64", ".caf", ".wave", NULL };
    const char *dot = strrchr(name, '.');
    if (!dot || name[0] == '.')
        return false;
    for (int i = 0; ext[i]; i++)
        if (strcasecmp(dot, ext[i]) == 0)
            return true;
    return false;
}

/* "a/b.c.wav" -> "a/b.c"; a name that is all extension keeps it. */
static char *strip_ext(const char *rel)
{
    char *s = gf_strdup(rel);
    char *slash = strrchr(s, '/');
    char *base = slash ? slash + 1 : s;
    char *dot = strrchr(base, '.');
    if (dot && dot != base)
        *dot = '\0';
    return s;
}

static const char *base_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b && b[1] ? b + 1 : path;
}

static int cmp_found_path(const void *a, const void *b)
{
    return strcmp(((const found *)a)->name, ((const found *)b)->name);
}

typedef struct {
    found_list *out;
    const char *top;         /* the DIR argument */
    bool recursive;
    size_t left_out;         /* subfolders not searched (no -r), or too deep */
} walk_ctx;

/* The audio files of DIR/rel (rel "" at the top), their names relative to
 * the top. Returns 0 or GF_EIO after saying which folder failed. */
static int walk(walk_ctx *w, const char *rel, int depth)
{
    char *dir = rel[0] ? gf_strfmt("%s/%s", w->top, rel) : gf_strdup(w->top);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        SAY("%s: cannot open directory: %s\n", dir, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(dir);
        return GF_EIO;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *nm = de->d_name;
        if (nm[0] == '.')
            continue;   /* ".", "..", and hidden names */
        struct stat lst, st;
        if (fstatat(dirfd(d), nm, &lst, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        char *sub = rel[0] ? gf_strfmt("%s/%s", rel, nm) : gf_strdup(nm);
        if (S_ISDIR(lst.st_mode)) {
            /* a real folder only: a link to one could make a circle */
            if (!w->recursive || depth >= MAX_DEPTH) {
                w->left_out++;
            } else if (walk(w, sub, depth + 1) != 0) {
                rc = GF_EIO;
            }
            free(sub);
            continue;
        }
        if (!is_audio_name(nm) || fstatat(dirfd(d), nm, &st, 0) != 0 || !S_ISREG(st.st_mode)) {
            free(sub);
            continue;
        }
        add(w->out, gf_strfmt("%s/%s", w->top, sub), strip_ext(sub), &st);
        free(sub);
    }
    closedir(d);
    free(dir);
    return rc;
}

/* One argument: a FILE, or a DIR's audio files (sorted by their names).
 * Returns 0, or the exit status of the input (66) after naming it. */
static int gather(const char *arg, bool recursive, found_list *out)
{
    struct stat st;
    if (stat(arg, &st) != 0) {
        SAY("%s: %s\n", arg, strerror(errno));
        return EXIT_NOINPUT;
    }
    if (S_ISDIR(st.st_mode)) {
        found_list here = { 0 };
        walk_ctx w = { .out = &here, .top = arg, .recursive = recursive };
        int rc = walk(&w, "", 0);
        if (w.left_out)
            SAY("%s: %zu subfolder%s not searched (%s)\n", arg, w.left_out,
                w.left_out == 1 ? "" : "s",
                recursive ? "deeper than 64 levels" : "-r/--recursive searches them");
        if (here.n == 0 && rc == 0) {
            SAY("%s: no audio files in this directory%s\n", arg,
                w.left_out && !recursive ? " (its subfolders: -r)" : "");
            rc = GF_ENOENT;
        }
        qsort(here.v, here.n, sizeof *here.v, cmp_found_path);
        for (size_t i = 0; i < here.n; i++) {
            found *f = &here.v[i];
            struct stat fst = { .st_dev = f->dev, .st_ino = f->ino };
            add(out, f->path, f->name, &fst);
        }
        free(here.v);
        return rc ? EXIT_NOINPUT : 0;
    }
    if (!S_ISREG(st.st_mode)) {
        SAY("%s: not a regular file\n", arg);
        return EXIT_NOINPUT;
    }
    if (access(arg, R_OK) != 0) {
        SAY("%s: %s\n", arg, strerror(errno));
        return EXIT_NOINPUT;
    }
    add(out, gf_strdup(arg), strip_ext(base_of(arg)), &st);
    return 0;
}

/* --files-from: one FILE or DIR per line ("-": stdin); empty lines are
 * skipped, a line is a path as it stands (only its "\n" or "\r\n" goes).
 * Returns 0 (inputs gathered, *n_missing counts the lines that failed), or
 * 66 when the list itself cannot be read. */
static int gather_list(const char *list, bool recursive, found_list *out, size_t *n_missing)
{
    FILE *f = strcmp(list, "-") == 0 ? stdin : fopen(list, "re");
    if (!f) {
        SAY("--files-from %s: %s\n", list, strerror(errno));
        return EXIT_NOINPUT;
    }
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t len;
    int rc = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (len == 0)
            continue;
        if ((size_t)len != strlen(line) || len >= PATH_MAX) {
            SAY("--files-from %s: line %zu: %s\n", list, lineno,
                len >= PATH_MAX ? "longer than a path can be" : "holds a NUL byte");
            ++*n_missing;
            continue;
        }
        if (gather(line, recursive, out) != 0)
            ++*n_missing;
    }
    if (ferror(f)) {
        SAY("--files-from %s: read error: %s\n", list, strerror(errno));
        rc = EXIT_NOINPUT;
    }
    free(line);
    if (f != stdin)
        fclose(f);
    return rc;
}

/* ---- naming and checking ------------------------------------------------ */

/* The absolute form of path with "." and ".." taken out and the longest
 * part of it that exists resolved (links followed), so that two spellings
 * of one file compare equal. Caller frees. */
static char *canonical(const char *path)
{
    char cwd[PATH_MAX];
    char *abs = path[0] == '/' || !getcwd(cwd, sizeof cwd) ? gf_strdup(path)
                                                           : gf_strfmt("%s/%s", cwd, path);
    /* lexical: split on '/', drop "" and ".", ".." pops */
    size_t n = strlen(abs);
    char *out = gf_malloc(n + 2);
    size_t o = 0;
    for (char *p = abs; *p;) {
        while (*p == '/')
            p++;
        char *e = p;
        while (*e && *e != '/')
            e++;
        size_t len = (size_t)(e - p);
        if (len == 0 || (len == 1 && p[0] == '.')) {
            /* nothing */
        } else if (len == 2 && p[0] == '.' && p[1] == '.') {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--;
        } else {
            out[o++] = '/';
            memcpy(out + o, p, len);
            o += len;
        }
        p = e;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    free(abs);
    /* the longest existing prefix, resolved */
    for (size_t cut = o; cut > 0; cut--) {
        if (cut != o && out[cut] != '/')
            continue;
        char save = out[cut];
        out[cut] = '\0';
        char *r = realpath(out, NULL);
        out[cut] = save;
        if (r) {
            char *res = gf_strfmt("%s%s", strcmp(r, "/") == 0 && out[cut] ? "" : r, out + cut);
            free(r);
            free(out);
            return res;
        }
    }
    return out;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return gf_strdup(".");
    if (slash == path)
        return gf_strdup("/");
    return gf_strfmt("%.*s", (int)(slash - path), path);
}

static char *join(const char *dir, const char *name, const char *suffix)
{
    size_t n = strlen(dir);
    return gf_strfmt("%s%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name, suffix);
}

typedef struct {
    char *key;         /* canonical path of an output file */
    size_t item;       /* index into the plan */
    char *path;        /* the path as the item names it */
} out_key;

static int cmp_key(const void *a, const void *b)
{
    const out_key *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->item > y->item) - (x->item < y->item);
}

static int cmp_found_file(const void *a, const void *b)
{
    const found *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static int cmp_found_order(const void *a, const void *b)
{
    const found *x = a, *y = b;
    return (x->order > y->order) - (x->order < y->order);
}

/* The same file twice: the later ones are marked and said. */
static void mark_duplicates(found_list *l)
{
    qsort(l->v, l->n, sizeof *l->v, cmp_found_file);
    for (size_t i = 1; i < l->n; i++)
        if (l->v[i].dev == l->v[i - 1].dev && l->v[i].ino == l->v[i - 1].ino) {
            l->v[i].dup = true;
            size_t first = i - 1;
            while (l->v[first].dup)
                first--;
            SAY("%s: the same file as %s: diarized once\n", l->v[i].path, l->v[first].path);
        }
    qsort(l->v, l->n, sizeof *l->v, cmp_found_order);
}

enum { MAX_OUTS = 7 };

/* The files an item writes, the RTTM last. */
static size_t outputs_of(const gf_diarout *it, char *out[MAX_OUTS])
{
    size_t n = 0;
    if (it->json)
        out[n++] = gf_strdup(it->json);
    if (it->exclusive)
        out[n++] = gf_strdup(it->exclusive);
    if (it->speakers)
        out[n++] = gf_strdup(it->speakers);
    if (it->save) {
        out[n++] = join(it->save, "segmentation_logits.npy", "");
        out[n++] = join(it->save, "segmentations.npy", "");
        out[n++] = join(it->save, "embeddings.npy", "");
    }
    out[n++] = gf_strdup(it->rttm);   /* last: what --skip-existing looks at */
    return n;
}

static bool present(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* mkdir -p of the folder that holds path (or of path itself). */
static int make_dirs(const char *dir)
{
    char *failed = NULL;
    int rc = gf_mkdir_p(dir, 0777, &failed);
    if (rc) {
        int e = errno;
        SAY("%s: cannot create directory: %s\n", failed ? failed : dir, strerror(e));
        free(failed);
        return EXIT_CANTCREAT;
    }
    return 0;
}

void gf_diarout_free(gf_diarout_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++) {
        gf_diarout *it = &plan->items[i];
        free(it->input);
        free(it->name);
        free(it->rttm);
        free(it->json);
        free(it->exclusive);
        free(it->speakers);
        free(it->save);
    }
    free(plan->items);
    memset(plan, 0, sizeof *plan);
}

int gf_diarout_make(const gf_diarout_opts *o, char *const *args, size_t n_args,
                    gf_diarout_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    found_list in = { 0 };
    int status = 0;
    for (size_t i = 0; i < n_args; i++)
        if (gather(args[i], o->recursive, &in) != 0)
            plan->n_missing++;
    if (o->files_from) {
        status = gather_list(o->files_from, o->recursive, &in, &plan->n_missing);
        if (status)
            goto out_free;
    }
    mark_duplicates(&in);

    size_t n_live = 0;
    for (size_t i = 0; i < in.n; i++)
        n_live += !in.v[i].dup;
    plan->items = gf_calloc(n_live ? n_live : 1, sizeof *plan->items);
    for (size_t i = 0; i < in.n; i++) {
        found *f = &in.v[i];
        if (f->dup)
            continue;
        gf_diarout *it = &plan->items[plan->n++];
        it->input = f->path;
        it->name = f->name;
        f->path = f->name = NULL;
        char *dir = o->out_dir ? gf_strdup(o->out_dir) : dir_of(it->input);
        /* beside the input, a DIR's file keeps only its own file name */
        const char *nm = o->out_dir ? it->name : base_of(it->name);
        it->rttm = join(dir, nm, ".rttm");
        it->json = o->json ? join(dir, nm, ".json") : NULL;
        it->exclusive = o->exclusive ? join(dir, nm, ".exclusive.rttm") : NULL;
        it->speakers = o->speakers ? join(dir, nm, ".speakers.npy") : NULL;
        free(dir);
        if (o->save_dir)
            it->save = n_live == 1 ? gf_strdup(o->save_dir) : join(o->save_dir, it->name, "");
    }

    /* two recordings, one output file: refused, both named (once a pair) */
    out_key *keys = gf_calloc(plan->n * MAX_OUTS + 1, sizeof *keys);
    size_t n_keys = 0;
    for (size_t i = 0; i < plan->n; i++) {
        char *outs[MAX_OUTS];
        size_t n = outputs_of(&plan->items[i], outs);
        for (size_t k = 0; k < n; k++) {
            keys[n_keys++] = (out_key){ .key = canonical(outs[k]), .item = i, .path = outs[k] };
        }
    }
    qsort(keys, n_keys, sizeof *keys, cmp_key);
    /* partner[b]: the item b was last named beside, so a pair sharing
     * several files is said once */
    size_t *partner = gf_malloc((plan->n ? plan->n : 1) * sizeof *partner);
    for (size_t i = 0; i < plan->n; i++)
        partner[i] = SIZE_MAX;
    size_t n_clash = 0;
    for (size_t i = 1; i < n_keys; i++) {
        size_t ia = keys[i - 1].item, ib = keys[i].item;
        if (strcmp(keys[i].key, keys[i - 1].key) != 0 || ia == ib || partner[ib] == ia)
            continue;
        partner[ib] = ia;
        if (n_clash++ < MAX_NAMED)
            SAY("%s and %s would both write %s\n", plan->items[ia].input, plan->items[ib].input,
                keys[i - 1].path);
    }
    if (n_clash > MAX_NAMED)
        SAY("... and %zu more\n", n_clash - MAX_NAMED);
    free(partner);
    for (size_t i = 0; i < n_keys; i++) {
        free(keys[i].key);
        free(keys[i].path);
    }
    free(keys);
    if (n_clash) {
        SAY("nothing diarized: %zu output name%s shared; name the recordings apart, give a "
            "folder above them (with --out its files keep their path below it), or diarize "
            "them in separate calls with different --out folders\n", n_clash,
            n_clash == 1 ? "" : "s");
        status = EXIT_USAGE;
        goto out_free;
    }

    /* outputs already there (but those an interrupted run of the same command
     * wrote and recorded: its own) */
    size_t n_there = 0, kept = 0;
    for (size_t i = 0; i < plan->n; i++) {
        gf_diarout *it = &plan->items[i];
        char *outs[MAX_OUTS];
        size_t n = outputs_of(it, outs);
        bool skip = o->existing == GF_DIAROUT_SKIP && present(it->rttm);
        gf_djouts *rec = NULL;
        if (o->ckpt_dir && !skip && o->existing != GF_DIAROUT_OVERWRITE) {
            char *base = gf_diarout_ckpt_file(o->ckpt_dir, it->rttm, ".out");
            char *rp = gf_strfmt("%ss", base);
            if (access(rp, F_OK) == 0)   /* read only where one is: none is made here */
                rec = gf_djouts_open(base);
            free(rp);
            free(base);
        }
        for (size_t k = 0; k < n; k++) {
            if (!skip && o->existing != GF_DIAROUT_OVERWRITE && present(outs[k])
                && !gf_djouts_ours(rec, outs[k])) {
                if (n_there < MAX_NAMED)
                    SAY("%s exists (an output of %s)\n", outs[k], it->input);
                n_there++;
            }
            free(outs[k]);
        }
        gf_djouts_close(&rec, false);
        if (skip) {
            plan->n_skipped++;
            free(it->input);
            free(it->name);
            free(it->rttm);
            free(it->json);
            free(it->exclusive);
            free(it->speakers);
            free(it->save);
        } else {
            plan->items[kept++] = *it;
        }
    }
    plan->n = kept;
    if (n_there) {
        if (n_there > MAX_NAMED)
            SAY("... and %zu more\n", n_there - MAX_NAMED);
        SAY("nothing diarized: %zu output%s already there; --overwrite replaces them, "
            "--skip-existing leaves out the recordings whose RTTM is there, --out DIR writes "
            "elsewhere\n", n_there, n_there == 1 ? " is" : "s are");
        status = EXIT_CANTCREAT;
        goto out_free;
    }
    if (plan->n_skipped)
        SAY("%zu recording%s left out: %s RTTM is there (--skip-existing)\n", plan->n_skipped,
            plan->n_skipped == 1 ? "" : "s", plan->n_skipped == 1 ? "its" : "their");

    /* the folders the outputs go into */
    for (size_t i = 0; i < plan->n && !status; i++) {
        char *d = dir_of(plan->items[i].rttm);
        status = make_dirs(d);
        free(d);
        if (!status && plan->items[i].save)
            status = make_dirs(plan->items[i].save);
    }
    if (!status && o->out_dir && plan->n == 0 && !plan->n_skipped && !plan->n_missing)
        status = make_dirs(o->out_dir);

out_free:
    for (size_t i = 0; i < in.n; i++) {
        free(in.v[i].path);
        free(in.v[i].name);
    }
    free(in.v);
    if (status)
        gf_diarout_free(plan);
    return status;
}

char *gf_diarout_ckpt_file(const char *dir, const char *rttm, const char *ext)
{
    char cwd[4096] = "";
    char *abs = rttm[0] == '/' ? gf_strdup(rttm)
                               : gf_strfmt("%s/%s", getcwd(cwd, sizeof cwd) ? cwd : ".", rttm);
    char hex[GF_SHA256_HEX_LEN];
    gf_sha256_hex(abs, strlen(abs), hex);
    free(abs);
    return gf_strfmt("%s/%.32s%s", dir, hex, ext);
}
