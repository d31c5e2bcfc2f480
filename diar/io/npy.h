/* npy.h — NumPy .npy files, read and written (.npz archives of them:
 * diar/io/npz.h).
 *
 * Fixtures, the PLDA model and saved pipeline intermediates are NumPy files.
 * Supported: little-endian (or byte-order-free) f4, f8, i1..i8, u1..u8, b1;
 * C order; header versions 1, 2 and 3. Every error names the file and the
 * problem, and is logged once here.
 *
 * Arrays are plain data: the caller may read and write a->data directly
 * (count elements of gf_npy_itemsize(dtype) bytes each, C order). */
#ifndef GF_NPY_H
#define GF_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GF_NPY_MAX_DIMS 8

typedef enum {
    GF_NPY_F32 = 0,
    GF_NPY_F64,
    GF_NPY_I8,
    GF_NPY_I16,
    GF_NPY_I32,
    GF_NPY_I64,
    GF_NPY_U8,
    GF_NPY_U16,
    GF_NPY_U32,
    GF_NPY_U64,
    GF_NPY_BOOL,
} gf_npy_dtype;

typedef struct {
    gf_npy_dtype dtype;              /* element type */
    int ndim;                        /* 0 (a scalar) .. GF_NPY_MAX_DIMS */
    size_t shape[GF_NPY_MAX_DIMS];   /* extent of each dimension, C order */
    size_t count;                    /* number of elements (product of shape) */
    void *data;                      /* count * itemsize bytes, owned by the array */
} gf_npy_array;

/* Bytes per element of a dtype. */
size_t gf_npy_itemsize(gf_npy_dtype dtype);
/* NumPy's descr string for a dtype ("<f4", "|u1", ...). */
const char *gf_npy_dtype_name(gf_npy_dtype dtype);

/* A new zero-filled array; shape has ndim entries. Caller destroys. */
gf_npy_array *gf_npy_new(gf_npy_dtype dtype, int ndim, const size_t *shape);
void gf_npy_destroy(gf_npy_array **self_p);

/* The largest .npy file gf_npy_load reads (intermediates of about six days
 * of audio), and the largest .npz gf_npz_load reads (a PLDA's are 134 kB):
 * a sparse file of terabytes is refused before its bytes are read. */
#define GF_NPY_FILE_MAX (4LL << 30)
#define GF_NPZ_FILE_MAX (64LL << 20)

/* The whole of the regular file at path, of at most max bytes, in a new
 * buffer (*buf, the caller frees) of *len bytes. Returns 0, or GF_ENOENT
 * (missing), GF_EIO, GF_EPERM, GF_EUNSUP (not a regular file: a FIFO is
 * refused, not waited on) or GF_ETOOBIG after logging "PATH: problem"
 * (gf_open_regular, common/util.h). */
int gf_npy_read_file(const char *path, long long max, unsigned char **buf, size_t *len);

/* Read a .npy file. Returns 0 and a new array in *out, or GF_ENOENT (missing),
 * GF_EIO (unreadable), GF_EINVAL (malformed, truncated), GF_EUNSUP (big-endian,
 * Fortran order, unsupported dtype), after logging "FILE: problem". */
int gf_npy_load(const char *path, gf_npy_array **out);
/* Parse .npy bytes; 'name' is used in messages. Same returns as gf_npy_load. */
int gf_npy_parse(const char *name, const void *buf, size_t len, gf_npy_array **out);
/* Write a .npy file (header v1, or v2 when the header needs it) through a
 * temporary file renamed into place. Returns 0 or GF_EIO. */
int gf_npy_save(const char *path, const gf_npy_array *a);
/* gf_npy_save, but with replace false an existing path is left as it is
 * and GF_EEXIST returned (common/util.h gf_write_file). */
int gf_npy_save_as(const char *path, const gf_npy_array *a, bool replace);
/* Serialise to a new buffer (caller frees); returns its length in *len. */
void *gf_npy_serialize(const gf_npy_array *a, size_t *len);

/* Converted copies of the elements, in C order (caller frees). Integers and
 * bools convert exactly to f64 up to 2^53. */
double *gf_npy_to_f64(const gf_npy_array *a);
float *gf_npy_to_f32(const gf_npy_array *a);
int64_t *gf_npy_to_i64(const gf_npy_array *a);

/* Check an array's shape: ndim dims, each equal to want[i] unless want[i] is
 * (size_t)-1 (any). On mismatch logs "NAME: expected shape (..), got (..)"
 * and returns GF_EINVAL. */
int gf_npy_check_shape(const char *name, const gf_npy_array *a, int ndim, const size_t *want);
/* Format a shape as "(18, 589, 3)" into buf. */
void gf_npy_shape_str(const gf_npy_array *a, char *buf, size_t size);

#endif
