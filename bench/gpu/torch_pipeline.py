"""torch_pipeline — the diarization pipeline's audio and network part in
PyTorch on the card, for the side-by-side with `gpuflock diarize --local
--gpu` in tools/gpu-session (step pipeline): audio in (torchaudio), 10 s
windows every 1 s, the segmentation network (batch B), powerset decoding to
three speakers, the Kaldi filterbank of every window (torchaudio on the
card), the ResNet34 trunk (batch B), mask-weighted statistics pooling per
speaker and seg_1. The same networks and weights as gpuflock's (through
tests/ref/gfnets.py). It writes the binarized segmentation and the
embeddings (NaN for a silent speaker) as .npy, for `gpuflock cluster`, which
the caller times: the recipe's clustering is numpy/scipy in pyannote, not
PyTorch. Prints one JSON line of per-stage wall seconds (the card
synchronised at each stage's end).

Written as a careful PyTorch user would: cudnn.benchmark on, the Kaldi
fbank of a whole batch of windows at once on the card (batched_fbank: the
same frames, window, pre-emphasis, FFT and mel banks as
torchaudio.compliance.kaldi.fbank, which takes one waveform at a time;
--check compares the two), a warm-up batch untimed, and the math mode a
row of the comparison: fp32, tf32, or bf16 (autocast over the networks).
--graphs captures the segmentation and the trunk of a full batch as CUDA
graphs (a shorter batch padded to it). --loop LIST runs every file LIST
names one after another, as a pyannote user's loop would (AUDIO is then
ignored, nothing is written; for bench/diarize/batch) and prints the
aggregate, with per-file p50 and p99 seconds.
Usage: torch_pipeline.py MODELS_DIR AUDIO OUT_DIR [BATCH] [fp32|tf32|bf16] [--check]
       [--graphs] [--loop LIST]"""
import contextlib
import json
import os
import sys
import time

import numpy as np
import torch
import torchaudio
import torchaudio.compliance.kaldi as kaldi

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "ref"))
import gfnets  # noqa: E402

WIN, STEP, FRAMES = 160000, 16000, 589
# powerset classes of segmentation-3.0: {}, {0}, {1}, {2}, {0,1}, {0,2}, {1,2}
POWERSET = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]]


def load(path):
    """[channels, samples] float32 in [-1, 1] and the rate: 16-bit PCM WAV
    through the standard library (recent torchaudio needs torchcodec to
    load anything), other files through torchaudio."""
    import wave
    try:
        with wave.open(path) as r:
            if r.getsampwidth() == 2:
                ch, sr = r.getnchannels(), r.getframerate()
                x = np.frombuffer(r.readframes(r.getnframes()), dtype="<i2")
                x = x.reshape(-1, ch).T.astype(np.float32) / 32768.0
                return torch.from_numpy(np.ascontiguousarray(x)), sr
    except wave.Error:
        pass
    return torchaudio.load(path)


FRAME, SHIFT, NFFT = 400, 160, 512   # 25 ms, 10 ms, the next power of two


def batched_fbank(windows, mel):
    """The 80-bin Kaldi fbank (no dither, hamming window, pre-emphasis 0.97,
    DC offset removed, power spectrum, log with float epsilon, snip_edges)
    of every window of [b, samples] at once, scaled to 16-bit PCM as
    kaldi.fbank is given it: [b, frames, 80]."""
    x = windows * 32768.0
    frames = x.unfold(1, FRAME, SHIFT)                         # [b, T, 400]
    frames = frames - frames.mean(dim=-1, keepdim=True)
    prev = torch.cat([frames[..., :1], frames[..., :-1]], dim=-1)
    frames = frames - 0.97 * prev
    win = torch.hamming_window(FRAME, periodic=False, alpha=0.54, beta=0.46,
                               device=x.device, dtype=x.dtype)
    frames = frames * win
    spec = torch.fft.rfft(frames, n=NFFT).abs().pow(2.0)       # [b, T, 257]
    spec = torch.matmul(spec, mel.t())                        # [b, T, 80]
    return torch.clamp(spec, min=torch.finfo(spec.dtype).eps).log()


def mel_banks(dev):
    m, _ = kaldi.get_mel_banks(80, NFFT, 16000.0, 20.0, 0.0, 100.0, -500.0, 1.0)
    return torch.nn.functional.pad(m, (0, 1), value=0.0).to(dev)   # [80, 257]


def check_fbank(windows, mel):
    """batched_fbank against kaldi.fbank, window by window: the largest
    absolute difference of the log-mel values."""
    got = batched_fbank(windows, mel)
    worst = 0.0
    for i in range(windows.shape[0]):
        ref = kaldi.fbank(windows[i:i + 1] * 32768.0, num_mel_bins=80, frame_length=25,
                          frame_shift=10, dither=0.0, window_type="hamming",
                          use_energy=False, sample_frequency=16000)
        worst = max(worst, (got[i] - ref).abs().max().item())
    return worst


class Nets:
    """The two networks on the card, at batch B, in one math mode; with
    graphs, the segmentation and the ResNet trunk of a full batch captured
    once as CUDA graphs and replayed (a shorter batch is padded to B)."""

    def __init__(self, models, dev, B, math, graphs):
        self.dev, self.B, self.math = dev, B, math
        self.seg = gfnets.Segmentation(gfnets.read_safetensors(os.path.join(models, "segmentation.safetensors")))
        self.seg.t = {k: v.to(dev) for k, v in self.seg.t.items()}
        self.seg.lstm.to(dev)
        emb = gfnets.Embedding(gfnets.read_safetensors(os.path.join(models, "embedding.safetensors"))).to(dev)
        self.R = emb.resnet
        self.powerset = torch.tensor(POWERSET, dtype=torch.float32, device=dev)
        self.mel = mel_banks(dev)
        self.graphs = None
        with torch.no_grad():
            w0 = 0.05 * torch.randn(B, WIN, device=dev)   # warm-up, untimed
            with self.amp():
                self.seg(w0)
                self.R.trunk(self.feats(w0))
            self.sync()
            if graphs:
                self.graphs = self.capture(w0)

    def amp(self):
        # bf16: the networks under autocast (the fbank and the pooling stay float32)
        return (torch.autocast(device_type=self.dev.type, dtype=torch.bfloat16)
                if self.math == "bf16" else contextlib.nullcontext())

    def sync(self):
        if self.dev.type == "cuda":
            torch.cuda.synchronize()

    def feats(self, windows):
        f = batched_fbank(windows, self.mel)
        return f - f.mean(dim=1, keepdim=True)

    def capture(self, w0):
        """Static input buffers and the two captured graphs."""
        g = {"wave": w0.clone(), "feats": self.feats(w0).clone()}
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), self.amp():   # warm-up on a side stream, as capture asks
            for _ in range(2):
                self.seg(g["wave"])
                self.R.trunk(g["feats"])
        torch.cuda.current_stream().wait_stream(s)
        g["seg_graph"], g["trunk_graph"] = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        with torch.cuda.graph(g["seg_graph"]), self.amp():
            g["logp"] = self.seg(g["wave"])
        with torch.cuda.graph(g["trunk_graph"]), self.amp():
            g["trunk"] = self.R.trunk(g["feats"])
        return g

    def segment(self, windows):
        b = windows.shape[0]
        if self.graphs is None:
            with self.amp():
                return self.seg(windows)
        self.graphs["wave"][:b].copy_(windows)
        self.graphs["wave"][b:].zero_()
        self.graphs["seg_graph"].replay()
        return self.graphs["logp"][:b]

    def trunk(self, feats):
        b = feats.shape[0]
        if self.graphs is None:
            with self.amp():
                return self.R.trunk(feats)
        self.graphs["feats"][:b].copy_(feats)
        self.graphs["feats"][b:].zero_()
        self.graphs["trunk_graph"].replay()
        return self.graphs["trunk"][:b]

    def run(self, audio, sec, check=False):
        """One recording: its activity [n, 589, 3], embeddings [n, 3, 256],
        seconds, and the fbank check when asked; stage seconds added to sec."""
        B, dev = self.B, self.dev

        def stage(name, t0):
            self.sync()
            sec[name] = sec.get(name, 0.0) + time.perf_counter() - t0

        t0 = time.perf_counter()
        wave, sr = load(audio)
        wave = wave.mean(0)
        if sr != 16000:
            wave = torchaudio.functional.resample(wave, sr, 16000)
        audio_s = wave.numel() / 16000
        n = max(1, (wave.numel() - WIN + STEP - 1) // STEP + 1)
        wave = torch.nn.functional.pad(wave, (0, max(0, (n - 1) * STEP + WIN - wave.numel())))
        wave = wave.to(dev)
        windows = wave.unfold(0, WIN, STEP)                    # [n, 160000], a view
        stage("decode", t0)

        t0 = time.perf_counter()
        act = torch.empty(n, FRAMES, 3, device=dev)
        for i in range(0, n, B):
            logp = self.segment(windows[i:i + B])              # [b, 589, 7]
            act[i:i + B] = self.powerset[logp.float().argmax(-1)]
        stage("segmentation", t0)

        t0 = time.perf_counter()
        feats = torch.empty(n, 998, 80, device=dev)
        for i in range(0, n, B):
            feats[i:i + B] = self.feats(windows[i:i + B])
        stage("fbank", t0)
        fbank_diff = check_fbank(windows[:min(n, 8)], self.mel) if check else None

        t0 = time.perf_counter()
        embs = torch.empty(n, 3, 256, device=dev)
        T = 125
        idx = torch.tensor([(j * FRAMES) // T for j in range(T)], device=dev)
        for i in range(0, n, B):
            feat = self.trunk(feats[i:i + B]).float()          # [b, 2560, 125]
            w = act[i:i + B].transpose(1, 2)[:, :, idx]        # [b, 3, 125]
            e = self.R.pool_batched(feat, w)
            e[act[i:i + B].sum(1) == 0] = float("nan")    # silent in the whole window
            embs[i:i + B] = e
        stage("embedding", t0)
        return act, embs, n, audio_s, fbank_diff


def main(argv):
    check = "--check" in argv
    graphs = "--graphs" in argv
    loop = None
    if "--loop" in argv:   # a pyannote user's loop: every file of a list, one after another
        k = argv.index("--loop")
        loop = [l.strip() for l in open(argv[k + 1]) if l.strip()]
        argv = argv[:k] + argv[k + 2:]
    argv = [a for a in argv if a not in ("--check", "--graphs")]
    models, audio, out = argv[1], argv[2], argv[3]
    B = int(argv[4]) if len(argv) > 4 else 32
    math = argv[5] if len(argv) > 5 else "fp32"
    if math not in ("fp32", "tf32", "bf16"):
        raise SystemExit(f"torch_pipeline: math {math!r}: fp32, tf32 or bf16")
    tf32 = math == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    os.makedirs(out, exist_ok=True)
    dev = torch.device(os.environ.get("GF_TORCH_DEVICE", "cuda"))   # cpu: a dry run
    if graphs and dev.type != "cuda":
        raise SystemExit("torch_pipeline: --graphs needs a CUDA device")
    nets = Nets(models, dev, B, math, graphs)
    row = {"pytorch": torch.__version__, "math": math, "batch": B, "cudnn_benchmark": True,
           "fbank": "batched", "cuda_graphs": graphs}
    sec = {}
    with torch.no_grad():
        if loop is None:
            act, embs, n, audio_s, fbank_diff = nets.run(audio, sec, check)
            np.save(os.path.join(out, "segmentations.npy"), act.cpu().numpy().astype(np.float32))
            np.save(os.path.join(out, "embeddings.npy"), embs.cpu().numpy().astype(np.float32))
            row.update({"windows": n, "audio_s": round(audio_s, 1)})
            if fbank_diff is not None:
                row["fbank_max_abs_diff_vs_kaldi"] = fbank_diff
        else:
            per, audio_s, windows = [], 0.0, 0
            t_all = time.perf_counter()
            for path in loop:
                t0 = time.perf_counter()
                act, embs, n, a_s, _ = nets.run(path, sec)
                # what the user's loop hands its clustering: host arrays
                a, e = act.cpu().numpy(), embs.cpu().numpy()
                per.append(time.perf_counter() - t0)
                audio_s, windows = audio_s + a_s, windows + n
                del a, e
            wall = time.perf_counter() - t_all
            per.sort()
            row.update({"files": len(loop), "windows": windows, "audio_s": round(audio_s, 1),
                        "wall_s": round(wall, 3), "x_real_time": round(audio_s / wall, 1),
                        "file_p50_s": round(per[len(per) // 2], 4),
                        "file_p99_s": round(per[min(len(per) - 1, int(len(per) * 0.99))], 4)})
    sec = {k: round(v, 3) for k, v in sec.items()}
    sec["total"] = round(sum(sec.values()), 3)
    row["seconds"] = sec
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
