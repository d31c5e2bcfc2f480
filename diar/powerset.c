/* powerset.c — hard powerset decoding, 7 classes to 3 speakers (powerset.h). */
#include "diar/powerset.h"

/* Which local speakers each powerset class holds (pyannote's class order:
 * the empty set, singletons, then pairs in lexicographic order). */
static const unsigned char members[GF_POWERSET_CLASSES][GF_POWERSET_SPEAKERS] = {
    { 0, 0, 0 }, { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 },
    { 1, 1, 0 }, { 1, 0, 1 }, { 0, 1, 1 },
};

void gf_powerset_decode(const float *logits, size_t n_frames, float *out)
{
    for (size_t t = 0; t < n_frames; t++) {
        const float *l = logits + t * GF_POWERSET_CLASSES;
        int best = 0;
        for (int c = 1; c < GF_POWERSET_CLASSES; c++)
            if (l[c] > l[best])   /* strict: the first maximum wins */
                best = c;
        for (int s = 0; s < GF_POWERSET_SPEAKERS; s++)
            out[t * GF_POWERSET_SPEAKERS + s] = members[best][s];
    }
}
