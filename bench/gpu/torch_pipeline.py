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
Usage: torch_pipeline.py MODELS_DIR AUDIO OUT_DIR [BATCH] [fp32|tf32]"""
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


def main(argv):
    models, audio, out = argv[1], argv[2], argv[3]
    B = int(argv[4]) if len(argv) > 4 else 32
    tf32 = len(argv) > 5 and argv[5] == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    os.makedirs(out, exist_ok=True)
    dev = torch.device(os.environ.get("GF_TORCH_DEVICE", "cuda"))   # cpu: a dry run
    seg = gfnets.Segmentation(gfnets.read_safetensors(os.path.join(models, "segmentation.safetensors")))
    seg.t = {k: v.to(dev) for k, v in seg.t.items()}
    seg.lstm.to(dev)
    emb = gfnets.Embedding(gfnets.read_safetensors(os.path.join(models, "embedding.safetensors"))).to(dev)
    R = emb.resnet
    powerset = torch.tensor(POWERSET, dtype=torch.float32, device=dev)
    sec = {}

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    def stage(name, t0):
        sync()
        sec[name] = sec.get(name, 0.0) + time.perf_counter() - t0

    with torch.no_grad():
        # warm-up: one batch through everything, not timed
        w0 = 0.05 * torch.randn(B, WIN, device=dev)
        seg(w0)
        R.trunk(torch.randn(B, 998, 80, device=dev))
        sync()

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
            logp = seg(windows[i:i + B])                       # [b, 589, 7]
            act[i:i + B] = powerset[logp.argmax(-1)]
        stage("segmentation", t0)

        t0 = time.perf_counter()
        feats = torch.empty(n, 998, 80, device=dev)
        for i in range(n):
            f = kaldi.fbank(windows[i:i + 1] * 32768.0, num_mel_bins=80, frame_length=25,
                            frame_shift=10, dither=0.0, window_type="hamming",
                            use_energy=False, sample_frequency=16000)
            feats[i] = f - f.mean(dim=0, keepdim=True)
        stage("fbank", t0)

        t0 = time.perf_counter()
        embs = torch.empty(n, 3, 256, device=dev)
        T = 125
        idx = torch.tensor([(j * FRAMES) // T for j in range(T)], device=dev)
        for i in range(0, n, B):
            feat = R.trunk(feats[i:i + B])                     # [b, 2560, 125]
            w = act[i:i + B].transpose(1, 2)[:, :, idx]        # [b, 3, 125]
            e = R.pool_batched(feat, w)
            e[act[i:i + B].sum(1) == 0] = float("nan")    # silent in the whole window
            embs[i:i + B] = e
        stage("embedding", t0)

    np.save(os.path.join(out, "segmentations.npy"), act.cpu().numpy().astype(np.float32))
    np.save(os.path.join(out, "embeddings.npy"), embs.cpu().numpy().astype(np.float32))
    sec = {k: round(v, 3) for k, v in sec.items()}
    sec["total"] = round(sum(sec.values()), 3)
    print(json.dumps({"pytorch": torch.__version__, "math": "tf32" if tf32 else "fp32",
                      "batch": B, "windows": n, "audio_s": round(audio_s, 1),
                      "seconds": sec}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
