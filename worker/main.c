/* main.c — gpuflock-worker, one per card. Not built yet: says so and exits. */
#include "common/error.h"

#include <stdio.h>

int main(void)
{
    fprintf(stderr, "gpuflock-worker: the worker is not implemented yet\n");
    return GF_EXIT_SOFTWARE;
}
