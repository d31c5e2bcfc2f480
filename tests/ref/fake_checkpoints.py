"""fake_checkpoints — checkpoints shaped like the published ones, from random
weights, for testing tools/convert-checkpoints.

  /usr/bin/python3 tests/ref/fake_checkpoints.py OUT_DIR

Writes seg.bin (a Lightning-style dict: state_dict plus a pickled object of a
class that does not exist here, as pyannote's checkpoints carry), emb.bin (the
pyannote wrapper's `resnet.*` names), emb_wespeaker.bin (bare WeSpeaker names
with a `projection.*` loss head), seg_bad_shape.bin and emb_missing.bin.
"""
import os
import sys
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gfnets  # noqa: E402


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seg = {k: torch.from_numpy(v) for k, v in gfnets.seg_random_weights(21).items()}
    emb = {k: torch.from_numpy(v) for k, v in gfnets.emb_random_weights(22).items()}
    # an object whose class will not be importable when the converter loads it
    mod = types.ModuleType("pyannote_fake_task")
    sys.modules["pyannote_fake_task"] = mod
    spec_cls = type("Specifications", (), {"__module__": "pyannote_fake_task"})
    mod.Specifications = spec_cls
    spec = spec_cls()
    spec.duration = 10.0
    torch.save({"state_dict": seg, "pyannote.audio": {"versions": {"torch": "fake"}},
                "hyper_parameters": {"specifications": spec}}, os.path.join(out, "seg.bin"))
    torch.save({"state_dict": emb, "epoch": 3}, os.path.join(out, "emb.bin"))
    bare = {k[len("resnet."):]: v for k, v in emb.items()}
    bare["projection.weight"] = torch.randn(10, 256)
    torch.save(bare, os.path.join(out, "emb_wespeaker.bin"))
    bad = dict(seg)
    bad["linear.0.weight"] = torch.randn(128, 255)
    torch.save({"state_dict": bad}, os.path.join(out, "seg_bad_shape.bin"))
    missing = dict(emb)
    del missing["resnet.layer3.2.bn2.running_var"]
    torch.save(missing, os.path.join(out, "emb_missing.bin"))


if __name__ == "__main__":
    main()
