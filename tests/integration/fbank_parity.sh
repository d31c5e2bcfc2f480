#!/bin/bash
# fbank_parity — our filterbank against torchaudio's compliance.kaldi.fbank.
# Windows of the shared sample recording and of random audio go through both
# (tests/helpers/fbank_dump and tests/ref/fbank_ref.py), exchanged as raw
# float32 files, with and without mean normalisation. Every element must be
# within 1e-3 of torchaudio's float32 result; the same torchaudio code run in
# float64 is printed beside it as the yardstick (docs/audio.md). Skips (77)
# where torchaudio is missing; without the shared sample its windows are
# reported skipped ("skip: ...").
set -u
BUILD=${BUILD:-build}
PY=/usr/bin/python3
DUMP=$BUILD/tests/helpers/fbank_dump
TOL=1e-3

if ! "$PY" -c 'import numpy, torch, torchaudio.compliance.kaldi' 2>/dev/null; then
    echo "skip: $PY cannot import torch/torchaudio/numpy (tools/setup-deps installs python3-torchaudio)"
    exit 77
fi
[ -x "$DUMP" ] || { echo "FAIL: $DUMP not built"; exit 1; }

tmp=$(mktemp -d --suffix=.gf_fbank_parity)
trap 'rm -rf "$tmp"' EXIT
fails=0

# check NAME IN OFFSET COUNT [--no-norm]
check() {
    local name=$1 in=$2 off=$3 count=$4 flag=${5:-}
    "$DUMP" $flag "$in" "$off" "$count" "$tmp/$name.wave.f32" "$tmp/$name.ours.f32" || {
        echo "$name: FAIL fbank_dump exited $?"; fails=$((fails + 1)); return; }
    "$PY" tests/ref/fbank_ref.py $flag "$tmp/$name.wave.f32" "$tmp/$name.ref.f32" || {
        echo "$name: FAIL fbank_ref.py exited $?"; fails=$((fails + 1)); return; }
    "$PY" tests/ref/fbank_ref.py $flag --f64 "$tmp/$name.wave.f32" "$tmp/$name.ref64.f64" || {
        echo "$name: FAIL fbank_ref.py --f64 exited $?"; fails=$((fails + 1)); return; }
    "$PY" tests/ref/f32_compare.py "$name" "$tmp/$name.ours.f32" "$tmp/$name.ref.f32" \
        "$tmp/$name.ref64.f64" 80 "$TOL" ||
        fails=$((fails + 1))
}

# Random audio, generated here: uniform, Gaussian, quiet noise, and a chirp
# under noise; 10 s each, plus odd lengths for the frame count.
"$PY" - "$tmp" <<'PYEOF'
import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(20261130)
n = 160000
t = np.arange(n) / 16000.0
sigs = {
    "uniform": rng.uniform(-1, 1, n),
    "gauss": np.clip(rng.normal(0, 0.1, n), -1, 1),
    "quiet": rng.normal(0, 1e-3, n),
    "chirp": 0.3 * np.sin(2 * np.pi * (100 * t + 0.5 * 390 * t * t)) + rng.normal(0, 0.01, n),
    "odd": rng.normal(0, 0.05, 16000 + 123),
}
for k, v in sigs.items():
    v.astype("<f4").tofile(f"{d}/{k}.f32")
PYEOF
for s in uniform gauss quiet chirp; do
    check "random-$s" "$tmp/$s.f32" 0 160000
done
check "random-odd" "$tmp/odd.f32" 0 16123
check "random-400" "$tmp/odd.f32" 77 400 --no-norm
check "random-gauss-nonorm" "$tmp/gauss.f32" 0 160000 --no-norm

# The real FFT alone, bit for bit against torch.fft.rfft (the FFT torchaudio
# calls) on frames shaped like the filterbank's: 400 values, zero-padded.
"$PY" - "$tmp" <<'PYEOF'
import sys
import numpy as np
rng = np.random.default_rng(7)
x = np.zeros((3000, 512), dtype="<f4")
x[:1000, :400] = rng.normal(0, 3000, (1000, 400))
x[1000:2000, :400] = rng.uniform(-3e4, 3e4, (1000, 400))
x[2000:, :400] = rng.normal(0, 1, (1000, 400)) * np.logspace(0, 4, 400)
x.tofile(sys.argv[1] + "/frames.f32")
PYEOF
if ! "$DUMP" --rfft "$tmp/frames.f32" "$tmp/spectra.f32"; then
    echo "rfft: FAIL fbank_dump --rfft exited $?"; fails=$((fails + 1))
elif ! "$PY" - "$tmp" <<'PYEOF'
import sys
import numpy as np
import torch
d = sys.argv[1]
x = np.fromfile(d + "/frames.f32", dtype="<f4").reshape(-1, 512)
ours = np.fromfile(d + "/spectra.f32", dtype="<f4").reshape(-1, 512)
t = torch.fft.rfft(torch.from_numpy(x)).numpy()
ref = np.empty_like(ours)
ref[:, 0] = t[:, 0].real
ref[:, 1:511:2] = t[:, 1:256].real
ref[:, 2:511:2] = t[:, 1:256].imag
ref[:, 511] = t[:, 256].real
bad = int((ref != ours).sum())
print(f"rfft: {'ok' if bad == 0 else 'FAIL'} {x.shape[0]} frames; values not bit-identical to "
      f"torch.fft.rfft: {bad} of {ours.size}; max |diff| {np.abs(ref - ours).max():.2e}")
sys.exit(1 if bad else 0)
PYEOF
then
    fails=$((fails + 1))
fi

# Real speech: 10 s windows of the shared sample (30 s, 16 kHz).
SAMPLE=../shared/data/audio/sample.wav
if [ -r "$SAMPLE" ]; then
    for off in 0 112000 160000 320000; do
        check "sample@$off" "$SAMPLE" "$off" 160000
    done
    check "sample@0-nonorm" "$SAMPLE" 0 160000 --no-norm
    check "sample-whole" "$SAMPLE" 0 480000
else
    echo "skip: the real-audio windows: no $SAMPLE"
fi

if [ "$fails" -ne 0 ]; then
    echo "fbank parity: $fails case(s) over tolerance"
    exit 1
fi
echo "fbank parity: all cases within $TOL"
