/* mathmode.c — the math modes' names (mathmode.h). */
#include "common/mathmode.h"

#include <string.h>

const char *gf_math_name(gf_math m)
{
    return m == GF_MATH_TF32 ? "tf32" : "fp32";
}

int gf_math_parse(const char *s, gf_math *out)
{
    if (strcmp(s, "fp32") == 0)
        *out = GF_MATH_FP32;
    else if (strcmp(s, "tf32") == 0)
        *out = GF_MATH_TF32;
    else
        return -1;
    return 0;
}
