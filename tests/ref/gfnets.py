"""gfnets — PyTorch reference of gpuflock's two CPU networks, and the
safetensors reading and writing they share with the C side.

Used by the parity test (tests/ref/nets_parity.py), the benchmark
(bench/nets/) and the checkpoint converter (tools/convert-checkpoints). It
builds the segmentation-3.0 and WeSpeaker ResNet34 networks in PyTorch from
the same safetensors file the C loader reads, following the conventions of
../shared/docs/MODELS.md. Run with Debian's /usr/bin/python3 (torch 1.13).
"""
import json
import math
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# ---------------------------------------------------------------- safetensors

_DT = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32,
       "F16": np.float16, "U8": np.uint8}
_DT_NAME = {np.dtype(v): k for k, v in _DT.items()}


def write_safetensors(path, tensors, metadata=None):
    """Write an ordered dict name -> numpy array (F32 or I64) as safetensors;
    written to path + '.tmp' then renamed."""
    header, offset, blobs = {}, 0, []
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, arr in tensors.items():
        arr = np.asarray(arr).copy(order="C")   # keeps 0-d (ascontiguousarray would not)
        raw = arr.tobytes()
        header[name] = {"dtype": _DT_NAME[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    import os
    os.replace(tmp, path)


def read_safetensors(path):
    """Read a safetensors file into an ordered dict name -> numpy array."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, en = e["data_offsets"]
        out[name] = np.frombuffer(data[base + b:base + en], dtype=_DT[e["dtype"]]).reshape(e["shape"]).copy()
    return out


# ---------------------------------------------------------------- segmentation

SEG_SAMPLES, SEG_FRAMES, SEG_CLASSES = 160000, 589, 7


def sinc_filters(low_hz_, band_hz_, window_, n_, sample_rate=16000.0):
    """80 sinc band-pass filters [80, 1, 251] from the learned pairs."""
    low = 50 + torch.abs(low_hz_)
    high = torch.clamp(low + 50 + torch.abs(band_hz_), 50, sample_rate / 2)
    band = (high - low)[:, 0]
    ft_low = torch.matmul(low, n_)
    ft_high = torch.matmul(high, n_)
    cos_left = ((torch.sin(ft_high) - torch.sin(ft_low)) / (n_ / 2)) * window_
    sin_left = ((torch.cos(ft_low) - torch.cos(ft_high)) / (n_ / 2)) * window_
    cos_f = torch.cat([cos_left, 2 * band.view(-1, 1), torch.flip(cos_left, dims=[1])], dim=1)
    sin_f = torch.cat([sin_left, torch.zeros_like(band.view(-1, 1)), -torch.flip(sin_left, dims=[1])], dim=1)
    cos_f = cos_f / (2 * band[:, None])
    sin_f = sin_f / (2 * band[:, None])
    return torch.cat([cos_f, sin_f], dim=0).view(80, 1, 251)


class Segmentation(nn.Module):
    """segmentation-3.0 architecture from a state dict of numpy arrays."""

    def __init__(self, sd, dtype=torch.float32):
        super().__init__()
        t = {k: torch.from_numpy(np.asarray(v)).to(dtype) for k, v in sd.items()
             if np.asarray(v).dtype != np.int64}
        self.t = t
        self.lstm = nn.LSTM(60, 128, num_layers=4, bidirectional=True, batch_first=True)
        self.lstm.load_state_dict({k[5:]: v for k, v in t.items() if k.startswith("lstm.")})
        self.lstm.to(dtype)
        self.eval()

    @torch.no_grad()
    def forward(self, wav):                        # [B, 160000]
        t = self.t
        x = F.instance_norm(wav[:, None, :], weight=t["sincnet.wav_norm1d.weight"],
                            bias=t["sincnet.wav_norm1d.bias"], eps=1e-5)
        fb = "sincnet.conv1d.0.filterbank."
        filt = sinc_filters(t[fb + "low_hz_"], t[fb + "band_hz_"], t[fb + "window_"], t[fb + "n_"])
        x = torch.abs(F.conv1d(x, filt, stride=10))
        for i in range(3):
            if i > 0:
                x = F.conv1d(x, t["sincnet.conv1d.%d.weight" % i], t["sincnet.conv1d.%d.bias" % i])
            x = F.max_pool1d(x, 3, 3)
            x = F.instance_norm(x, weight=t["sincnet.norm1d.%d.weight" % i],
                                bias=t["sincnet.norm1d.%d.bias" % i], eps=1e-5)
            x = F.leaky_relu(x, 0.01)
        x, _ = self.lstm(x.transpose(1, 2))
        x = F.leaky_relu(F.linear(x, t["linear.0.weight"], t["linear.0.bias"]), 0.01)
        x = F.leaky_relu(F.linear(x, t["linear.1.weight"], t["linear.1.bias"]), 0.01)
        return F.log_softmax(F.linear(x, t["classifier.weight"], t["classifier.bias"]), dim=-1)


def seg_random_weights(seed):
    """Random but sensible segmentation weights under the published names."""
    g = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    sd = {}
    sd["sincnet.wav_norm1d.weight"] = np.array([1.0 + 0.1 * rng.standard_normal()], np.float32)
    sd["sincnet.wav_norm1d.bias"] = np.array([0.05 * rng.standard_normal()], np.float32)
    # mel-spaced initial bands, as the filterbank's own initialisation, jittered
    to_mel = lambda hz: 2595 * np.log10(1 + hz / 700.0)
    to_hz = lambda mel: 700 * (10 ** (mel / 2595) - 1)
    hz = to_hz(np.linspace(to_mel(30), to_mel(8000 - 100), 41))
    low = hz[:-1] * (1 + 0.05 * rng.standard_normal(40))
    band = np.diff(hz) * (1 + 0.1 * rng.standard_normal(40))
    fb = "sincnet.conv1d.0.filterbank."
    sd[fb + "low_hz_"] = low.reshape(40, 1).astype(np.float32)
    sd[fb + "band_hz_"] = band.reshape(40, 1).astype(np.float32)
    n_lin = torch.linspace(0, 251 / 2 - 1, steps=int(251 / 2))
    sd[fb + "window_"] = (0.54 - 0.46 * torch.cos(2 * math.pi * n_lin / 251)).numpy().astype(np.float32)
    n = (251 - 1) / 2.0
    sd[fb + "n_"] = (2 * math.pi * torch.arange(-n, 0).view(1, -1) / 16000).numpy().astype(np.float32)
    c1, c2 = nn.Conv1d(80, 60, 5), nn.Conv1d(60, 60, 5)
    for i, c in ((1, c1), (2, c2)):
        sd["sincnet.conv1d.%d.weight" % i] = c.weight.detach().numpy()
        sd["sincnet.conv1d.%d.bias" % i] = c.bias.detach().numpy()
    for i, c in enumerate((80, 60, 60)):
        sd["sincnet.norm1d.%d.weight" % i] = (1 + 0.2 * rng.standard_normal(c)).astype(np.float32)
        sd["sincnet.norm1d.%d.bias" % i] = (0.1 * rng.standard_normal(c)).astype(np.float32)
    torch.manual_seed(seed)
    lstm = nn.LSTM(60, 128, num_layers=4, bidirectional=True, batch_first=True)
    # PyTorch's default init leaves the LSTM nearly linear and the head nearly
    # uniform; larger weights exercise saturation and give confident,
    # varied log-probabilities, a sharper test of parity.
    for k, v in lstm.state_dict().items():
        sd["lstm." + k] = 2.0 * v.numpy()
    for name, (o, i) in (("linear.0", (128, 256)), ("linear.1", (128, 128)), ("classifier", (7, 128))):
        lin = nn.Linear(i, o)
        sd[name + ".weight"] = (20.0 if name == "classifier" else 3.0) * lin.weight.detach().numpy()
        sd[name + ".bias"] = lin.bias.detach().numpy()
    del g
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in sd.items()}


# ---------------------------------------------------------------- embedding

EMB_FRAMES, EMB_MELS, EMB_DIM = 998, 80, 256
LAYERS = ((1, 3, 32), (2, 4, 64), (3, 6, 128), (4, 3, 256))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        cin = 32
        for li, n, c in LAYERS:
            blocks = []
            for b in range(n):
                blocks.append(Block(cin, c, 2 if (b == 0 and li > 1) else 1))
                cin = c
            setattr(self, "layer%d" % li, nn.Sequential(*blocks))
        self.seg_1 = nn.Linear(5120, 256)

    def trunk(self, fbank):                      # [B, T, 80] -> [B, 2560, T/8]
        x = fbank.transpose(1, 2).unsqueeze(1)
        x = F.relu(self.bn1(self.conv1(x)))
        for li, _, _ in LAYERS:
            x = getattr(self, "layer%d" % li)(x)
        return x.reshape(x.shape[0], -1, x.shape[-1])

    def pool_batched(self, feat, w):              # feat [B, 2560, T], w [B, S, T] -> [B, S, 256]
        """pool and seg_1 for every window and speaker of a batch at once."""
        v1 = w.sum(-1, keepdim=True) + 1e-8
        mean = torch.einsum("brt,bst->bsr", feat, w) / v1
        dx2 = (feat[:, None] - mean[..., None]) ** 2
        v2 = (w * w).sum(-1, keepdim=True)
        var = (dx2 * w[:, :, None, :]).sum(-1) / (v1 - v2 / v1 + 1e-8)
        return self.seg_1(torch.cat([mean, var.sqrt()], -1))

    @staticmethod
    def pool(feat, w):                            # feat [2560, T], w [T]
        v1 = w.sum() + 1e-8
        mean = (feat * w).sum(dim=1) / v1
        dx2 = (feat - mean[:, None]) ** 2
        v2 = (w * w).sum()
        var = (dx2 * w).sum(dim=1) / (v1 - v2 / v1 + 1e-8)
        return torch.cat([mean, torch.sqrt(var)])


class Embedding(nn.Module):
    def __init__(self, sd, dtype=torch.float32):
        super().__init__()
        self.resnet = ResNet()
        self.resnet.load_state_dict({k[7:]: torch.from_numpy(np.asarray(v)) for k, v in sd.items()},
                                    strict=False)
        self.to(dtype)
        self.eval()

    @torch.no_grad()
    def forward(self, fbank, masks):              # [B, 998, 80], [B, S, 589] -> [B, S, 256]
        feat = self.resnet.trunk(fbank)
        T = feat.shape[-1]
        idx = torch.tensor([(i * masks.shape[-1]) // T for i in range(T)])
        out = []
        for b in range(masks.shape[0]):
            stats = [self.resnet.pool(feat[b], masks[b, s][idx]) for s in range(masks.shape[1])]
            out.append(self.resnet.seg_1(torch.stack(stats)))
        return torch.stack(out)


def emb_random_weights(seed, with_counters=True):
    """Random but sensible ResNet34 weights under MODELS.md's names."""
    torch.manual_seed(seed)
    net = ResNet()
    rng = np.random.default_rng(seed + 1)
    sd = {}
    for k, v in net.state_dict().items():
        a = v.numpy().copy()
        if k.endswith("num_batches_tracked"):
            if not with_counters:
                continue
            a = np.array(1000 + seed, dtype=np.int64)
        elif k.endswith("running_var"):
            a = rng.uniform(0.5, 2.0, a.shape).astype(np.float32)
        elif k.endswith("running_mean"):
            a = (0.1 * rng.standard_normal(a.shape)).astype(np.float32)
        elif ".bn" in k or "shortcut.1" in k or k.startswith("bn1"):
            if k.endswith("weight"):
                a = rng.uniform(0.5, 1.2, a.shape).astype(np.float32)
            else:
                a = (0.1 * rng.standard_normal(a.shape)).astype(np.float32)
        elif k == "seg_1.bias":
            a = 0.01 * a   # else the bias dominates and every embedding looks alike
        sd["resnet." + k] = a
    return sd


# ---------------------------------------------------------------- test inputs

def random_audio(windows, seed):
    """Speech-like test audio [windows, 160000]: filtered noise bursts plus
    gliding harmonics at a realistic level (RMS about 0.05), never silent."""
    rng = np.random.default_rng(seed)
    n = windows * SEG_SAMPLES
    t = np.arange(n) / 16000.0
    noise = rng.standard_normal(n)
    # simple one-pole low-pass and a band-pass-ish difference
    # one-pole low-pass y[n] = 0.9 y[n-1] + 0.1 x[n], as a truncated impulse response
    lp = np.convolve(noise, 0.1 * 0.9 ** np.arange(200))[:n]
    env = 0.5 + 0.5 * np.sin(2 * np.pi * 0.7 * t) ** 2
    f0 = 140 + 40 * np.sin(2 * np.pi * 0.3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / 16000.0
    voiced = sum(np.sin(k * phase) / k for k in range(1, 12))
    x = 0.03 * voiced * env + 0.2 * lp + 0.002 * noise
    x = x / np.sqrt(np.mean(x * x)) * 0.05
    return x.reshape(windows, SEG_SAMPLES).astype(np.float32)


def fbank_features(wave):
    """Kaldi-style fbank [998, 80] with per-bin mean normalisation (the
    embedding's input), via torchaudio."""
    import torchaudio.compliance.kaldi as kaldi
    w = torch.from_numpy(wave)[None, :] * 32768.0
    f = kaldi.fbank(w, num_mel_bins=80, frame_length=25, frame_shift=10, dither=0.0,
                    window_type="hamming", use_energy=False, sample_frequency=16000)
    return (f - f.mean(dim=0, keepdim=True)).numpy().astype(np.float32)


def random_masks(windows, seed, speakers=3):
    """Binary activity masks [windows, speakers, 589] made of runs; every
    window has one long, one short and one patchy speaker."""
    rng = np.random.default_rng(seed)
    m = np.zeros((windows, speakers, SEG_FRAMES), np.float32)
    for b in range(windows):
        for s in range(speakers):
            n_runs = 1 + s * 3
            for _ in range(n_runs):
                start = rng.integers(0, SEG_FRAMES - 20)
                length = rng.integers(10, 300 // (s + 1))
                m[b, s, start:start + length] = 1.0
    return m
