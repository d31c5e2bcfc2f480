/* mathmode.h — the math modes a network runs in on a card.
 *
 * Below the route planner (route/) and the card runtime (gpu/) alike: the
 * configuration, the evidence tables, the BLAS wrapper and every launcher
 * name a mode. */
#ifndef GF_MATHMODE_H
#define GF_MATHMODE_H

typedef enum {
    GF_MATH_FP32 = 0,   /* IEEE fp32 throughout */
    GF_MATH_TF32 = 1,   /* tensor-core tf32 inputs, fp32 accumulation */
} gf_math;

#define GF_N_MATH 2

/* "fp32" / "tf32"; parse returns 0 or -1 for an unknown name. */
const char *gf_math_name(gf_math m);
int gf_math_parse(const char *s, gf_math *out);

#endif
