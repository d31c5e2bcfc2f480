#!/bin/bash
# vad_parity — the C voice activity detector (diar/vad.c, run by
# tests/helpers/vad_probs) against the PyTorch reimplementation of the ONNX
# graph (tests/ref/silero_vad_ref.py, from the ONNX file's own initializers,
# in float64) on the nine real meetings of ../shared/data/audio/ami-debug
# (30 s each), ten seconds of digital silence and of white noise at two
# levels: every chunk's speech probability within 1e-4 (max abs), the largest
# printed (2.8e-5 when it was written).
# Both read the same samples (vad_probs writes what it decoded). Skips (77)
# where the converted file or the ONNX file is missing (tools/fetch-vad) or
# Debian's python3-torch / python3-onnx are not importable.
set -u
BUILD=${BUILD:-build}
PY=/usr/bin/python3
VAD_DIR=${VAD_DIR:-.cache/vad}
model=$VAD_DIR/silero_vad.safetensors
onnx=$VAD_DIR/silero_vad.onnx
AUDIO=../shared/data/audio/ami-debug
if ! [ -f "$model" ] || ! [ -f "$onnx" ]; then
    echo "skip: $model or $onnx is missing (tools/fetch-vad writes them)"
    exit 77
fi
if ! [ -x "$PY" ] || ! "$PY" -c 'import torch, onnx, numpy' 2>/dev/null; then
    echo "skip: /usr/bin/python3 cannot import torch, onnx and numpy"
    exit 77
fi
probe=$BUILD/tests/helpers/vad_probs
[ -x "$probe" ] || { echo "FAIL: $probe is not built"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The synthetic cases, as raw float32 at 16 kHz.
"$PY" - "$work" <<'EOF' || exit 1
import sys
import numpy as np
d = sys.argv[1]
n = 10 * 16000
np.zeros(n, dtype="<f4").tofile(d + "/silence.f32")
rng = np.random.default_rng(7)
(0.3 * rng.standard_normal(n)).clip(-1, 1).astype("<f4").tofile(d + "/noise.f32")
(1e-3 * rng.standard_normal(n)).astype("<f4").tofile(d + "/quiet_noise.f32")
EOF

inputs=("$AUDIO"/*.wav "$work"/silence.f32 "$work"/noise.f32 "$work"/quiet_noise.f32)
if ! [ -f "${inputs[0]}" ]; then
    echo "FAIL: no recordings in $AUDIO"
    exit 1
fi
fails=0 worst=0 count=0
for f in "${inputs[@]}"; do
    name=$(basename "$f")
    name=${name%.*}
    if ! "$probe" --pcm-out "$work/$name.pcm.f32" "$model" "$f" >"$work/$name.c.txt"; then
        echo "FAIL $name: vad_probs failed"
        fails=$((fails + 1))
        continue
    fi
    line=$("$PY" tests/ref/silero_vad_ref.py "$onnx" "$work/$name.pcm.f32" \
           --against "$work/$name.c.txt" --tol 1e-4) || fails=$((fails + 1))
    echo "$line"
    d=$(sed -n 's/.*max |diff| \([^ ]*\) .*/\1/p' <<<"$line")
    worst=$("$PY" -c "print(max(float('$worst'), float('${d:-inf}')))")
    count=$((count + 1))
done
echo "vad parity: $count recordings, largest |diff| of a chunk's probability $worst (tolerance 1e-4)"
[ "$fails" -eq 0 ]
