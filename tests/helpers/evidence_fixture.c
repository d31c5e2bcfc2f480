/* evidence_fixture.c — write a small valid evidence directory for the
 * integration tests and print its path: one point binding of the lstm area
 * for an NVIDIA H200 (cc 9.0, 132 SMs), measured at (lstm.stack, 32, fp32),
 * with its accuracy, speed and end-to-end records. The caller removes it. */
#include "tests/unit/fixture_evidence.h"

int main(void)
{
    fx_dir f;
    fx_init(&f, "fbank, sincnet, segconv, lstm, resnet, pooling, embedding, dense");
    fx_binding b = fx_h200_lstm();
    fx_table(&f, "lstm.yaml", &b, 1);
    printf("%s\n", f.dir);
    return 0;
}
