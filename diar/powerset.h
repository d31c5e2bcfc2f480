/* powerset.h — powerset decoding of the segmentation network's output.
 *
 * The network predicts, per frame, one of 7 classes over 3 local speakers:
 * {}, {0}, {1}, {2}, {0,1}, {0,2}, {1,2}. Hard decoding takes the most likely
 * class (the first on ties, like torch.argmax) and writes its speakers as
 * 0/1 activity. */
#ifndef GF_POWERSET_H
#define GF_POWERSET_H

#include <stddef.h>

#define GF_POWERSET_CLASSES 7
#define GF_POWERSET_SPEAKERS 3

/* logits: n_frames x 7 (any monotone scores); out: n_frames x 3 of 0.0/1.0. */
void gf_powerset_decode(const float *logits, size_t n_frames, float *out);

#endif
