#!/usr/bin/python3
"""Reference filterbank: torchaudio's compliance.kaldi.fbank as pyannote's
WeSpeaker wrapper calls it (waveform x 2^15, 80 bins, 25/10 ms, dither 0,
hamming, no energy), then each bin's mean over the frames subtracted.

    fbank_ref.py [--no-norm] [--f64] WAVE.f32 FEAT_OUT

WAVE.f32 is raw little-endian float32. FEAT_OUT gets [frames x 80]
row-major: float32 as the pipeline computes it, or, with --f64, the same
torchaudio code run in float64 (tables, FFT and all) and written as float64:
the yardstick that shows how far the float32 reference itself is from exact."""
import sys

import numpy as np
import torch
import torchaudio.compliance.kaldi as kaldi


def main(argv):
    norm, f64 = True, False
    while argv and argv[0].startswith("--"):
        if argv[0] == "--no-norm":
            norm = False
        elif argv[0] == "--f64":
            f64 = True
        else:
            sys.exit(f"fbank_ref.py: unknown option {argv[0]}")
        argv = argv[1:]
    if len(argv) != 2:
        sys.exit("usage: fbank_ref.py [--no-norm] [--f64] WAVE.f32 FEAT_OUT")
    wave = np.fromfile(argv[0], dtype="<f4")
    w = torch.from_numpy(wave.astype(np.float64) if f64 else wave.copy()).unsqueeze(0)
    feat = kaldi.fbank(w * (1 << 15), num_mel_bins=80, frame_length=25, frame_shift=10,
                       dither=0.0, sample_frequency=16000, window_type="hamming",
                       use_energy=False)
    if norm:
        feat = feat - torch.mean(feat, dim=0, keepdim=True)
    feat.numpy().astype("<f8" if f64 else "<f4").tofile(argv[1])


if __name__ == "__main__":
    main(sys.argv[1:])
