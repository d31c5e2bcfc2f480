/* curve_keys.c — print a fresh CURVE key pair, "PUBLIC SECRET" in Z85, for
 * tests that run gpuflockd on a tcp:// endpoint. */
#include <stdio.h>
#include <zmq.h>

int main(void)
{
    char pub[41], sec[41];
    if (zmq_curve_keypair(pub, sec) != 0) {
        fprintf(stderr, "curve_keys: this libzmq has no CURVE support\n");
        return 1;
    }
    printf("%s %s\n", pub, sec);
    return 0;
}
