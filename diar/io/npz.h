/* npz.h — NumPy .npz archives, read and written: zip files whose members
 * are .npy files (diar/io/npy.h), stored or deflated (no zip64 beyond what
 * numpy writes for small files). The PLDA model and the community-1
 * fixtures come as .npz. Every error names the file (a member as
 * "FILE[member]") and the problem, and is logged once here. */
#ifndef GF_NPZ_H
#define GF_NPZ_H

#include <stdbool.h>
#include <stddef.h>

#include "diar/io/npy.h"

/* .npz archives: a list of named arrays. */
typedef struct gf_npz gf_npz;

/* Read every member of a .npz file (member "x.npy" is named "x"). Same
 * returns as gf_npy_load; a bad member is named as "FILE[member]". */
int gf_npz_load(const char *path, gf_npz **out);
/* Number of members, and the name of member i (borrowed). */
size_t gf_npz_count(const gf_npz *z);
const char *gf_npz_name(const gf_npz *z, size_t i);
/* The member named 'name' (without ".npy"), or NULL. Borrowed. */
const gf_npy_array *gf_npz_get(const gf_npz *z, const char *name);
void gf_npz_destroy(gf_npz **self_p);

/* Write n arrays as a .npz (members "names[i].npy"), deflated when 'compressed'
 * (np.savez_compressed) else stored (np.savez); temp file + rename.
 * Returns 0, GF_ETOOBIG (over 4 GiB: zip64 not written) or GF_EIO. */
int gf_npz_save(const char *path, const char *const *names, const gf_npy_array *const *arrays,
                size_t n, bool compressed);

#endif
