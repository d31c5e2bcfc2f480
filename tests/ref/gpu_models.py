"""gpu_models — write random-weight model files for the GPU tests and
benchmarks: DIR/segmentation.safetensors and DIR/embedding.safetensors, in
gpuflock's format (tests/ref/gfnets.py). Usage: gpu_models.py DIR [SEED]."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gfnets  # noqa: E402


def main(argv):
    out = argv[1]
    seed = int(argv[2]) if len(argv) > 2 else 1
    os.makedirs(out, exist_ok=True)
    gfnets.write_safetensors(os.path.join(out, "segmentation.safetensors"),
                             gfnets.seg_random_weights(seed))
    gfnets.write_safetensors(os.path.join(out, "embedding.safetensors"),
                             gfnets.emb_random_weights(seed + 1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
