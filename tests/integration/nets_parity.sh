#!/bin/bash
# nets_parity — the C segmentation and embedding networks against the PyTorch
# reference (tests/ref/gfnets.py) on random weights written to our safetensors
# format and random speech-like audio: segmentation log-probabilities within
# 1e-4 (max abs), embeddings with cosine similarity above 0.9999. Two windows.
# Skips (77) where Debian's python3-torch is not importable.
set -u
BUILD=${BUILD:-build}
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c 'import torch, torchaudio, numpy' 2>/dev/null; then
    echo "skip: /usr/bin/python3 cannot import torch, torchaudio and numpy"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" tests/ref/nets_parity.py "$BUILD" "$work" 2
