/* main.c — gpuflockd, the broker. Not built yet: says so and exits. */
#include "common/error.h"

#include <stdio.h>

int main(void)
{
    fprintf(stderr, "gpuflockd: the broker is not implemented yet\n");
    return GF_EXIT_SOFTWARE;
}
