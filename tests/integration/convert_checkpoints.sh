#!/bin/bash
# convert_checkpoints — tools/convert-checkpoints on fake checkpoints shaped
# like the published ones (random weights, torch.save), then `gpuflock models
# check` on the result, then on damaged copies (the voice activity detector's
# file among them, where this tree has it). Skips (77) without torch.
set -u
BUILD=${BUILD:-build}
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
    echo "skip: /usr/bin/python3 cannot import torch and numpy"
    exit 77
fi
GF=$BUILD/bin/gpuflock
PLDA=../shared/data/community-1/plda
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$PY" tests/ref/fake_checkpoints.py "$work" || fail "fake checkpoints"
tools/convert-checkpoints --out "$work/m" --segmentation "$work/seg.bin" \
    --embedding "$work/emb.bin" --plda "$PLDA" || fail "conversion"
"$GF" models check "$work/m" >"$work/out" 2>&1 || { cat "$work/out"; fail "models check"; }
cat "$work/out"
grep -q '54 tensors.*1,473,265 parameters' "$work/out" || fail "segmentation counts"
grep -q '218 tensors.*6,634,336 parameters' "$work/out" || fail "embedding counts"
grep -q '^all good' "$work/out" || fail "summary"
(cd "$work/m" && sha256sum -c --quiet MANIFEST.sha256) || fail "sha256sum -c"
ls "$work/m"/*.tmp "$work/m"/plda/*.tmp 2>/dev/null && fail "temporary files left"

# the converted tensors are the checkpoint's, bit for bit, under the same names
"$PY" - "$work" <<'PYEOF' || fail "converted tensors differ"
import sys, types, torch, numpy as np
sys.path.insert(0, "tests/ref")
mod = types.ModuleType("pyannote_fake_task")   # the class the fake checkpoint pickles
mod.Specifications = type("Specifications", (), {"__module__": "pyannote_fake_task"})
sys.modules["pyannote_fake_task"] = mod
import gfnets
w = sys.argv[1]
for ck, st in (("seg.bin", "segmentation"), ("emb.bin", "embedding")):
    sd = torch.load("%s/%s" % (w, ck))["state_dict"]
    got = gfnets.read_safetensors("%s/m/%s.safetensors" % (w, st))
    assert set(sd) == set(got), (ck, set(sd) ^ set(got))
    for k, v in sd.items():
        assert np.array_equal(v.numpy(), got[k]), k
print("tensors identical")
PYEOF

# a bare WeSpeaker state dict maps onto the same names
tools/convert-checkpoints --out "$work/w" --embedding "$work/emb_wespeaker.bin" >"$work/conv" 2>&1 \
    || { cat "$work/conv"; fail "wespeaker naming"; }
grep -q 'dropped projection.weight' "$work/conv" || fail "projection head not reported"
"$PY" -c "
import sys; sys.path.insert(0, 'tests/ref'); import gfnets, numpy as np
a = gfnets.read_safetensors('$work/w/embedding.safetensors'); b = gfnets.read_safetensors('$work/m/embedding.safetensors')
assert set(a) == set(b) and all(np.array_equal(a[k], b[k]) for k in a)" || fail "wespeaker names map differently"

# checkpoints that do not fit: an error naming the tensor, nothing written
tools/convert-checkpoints --out "$work/bad" --segmentation "$work/seg_bad_shape.bin" 2>"$work/err" \
    && fail "wrong shape accepted"
grep -q 'linear.0.weight: shape \[128, 255\]' "$work/err" || { cat "$work/err"; fail "shape message"; }
tools/convert-checkpoints --out "$work/bad" --embedding "$work/emb_missing.bin" 2>"$work/err" \
    && fail "missing tensor accepted"
grep -q 'resnet.layer3.2.bn2.running_var: missing' "$work/err" || { cat "$work/err"; fail "missing message"; }
[ -e "$work/bad/segmentation.safetensors" ] && fail "half-written output"

# damaged directories
cp -r "$work/m" "$work/d1"
printf '\x01' | dd of="$work/d1/embedding.safetensors" bs=1 seek=5000 conv=notrunc 2>/dev/null
"$GF" models check "$work/d1" >"$work/out" 2>&1; rc=$?
[ $rc -eq 65 ] || fail "changed byte: exit $rc"
grep -q 'embedding.safetensors: SHA-256 .* does not match' "$work/out" || fail "digest message"
cp -r "$work/m" "$work/d2"
rm "$work/d2/plda/plda.npz"
"$GF" models check "$work/d2" >"$work/out" 2>&1; rc=$?
[ $rc -eq 65 ] && grep -q 'plda/plda.npz: missing' "$work/out" || fail "missing plda: exit $rc"
cp -r "$work/m" "$work/d3"
rm "$work/d3/MANIFEST.sha256"
"$GF" models check "$work/d3" >"$work/out" 2>&1; rc=$?
[ $rc -eq 65 ] && grep -q 'MANIFEST.sha256: missing' "$work/out" || fail "missing manifest: exit $rc"
cp -r "$work/m" "$work/d4"
truncate -s -100 "$work/d4/segmentation.safetensors"
(cd "$work/d4" && sha256sum segmentation.safetensors embedding.safetensors plda/*.npz >MANIFEST.sha256)
"$GF" models check "$work/d4" >"$work/out" 2>&1; rc=$?
[ $rc -eq 65 ] && grep -q 'segmentation.safetensors: tensor .*truncated' "$work/out" \
    || { cat "$work/out"; fail "truncated file: exit $rc"; }
# the voice activity detector's file: the default one (found or said to be
# absent), a good copy in DIR (when this tree has one), a damaged one in DIR
grep -qE '^silero_vad.safetensors +vad +(40 tensors .* ok|not found at .*energy detector)' "$work/out" \
    || fail "no line for the VAD's file"
if [ -f .cache/vad/silero_vad.safetensors ]; then
    cp -r "$work/m" "$work/d5"
    cp .cache/vad/silero_vad.safetensors "$work/d5/"
    "$GF" models check "$work/d5" >"$work/out" 2>&1 || { cat "$work/out"; fail "VAD file in DIR"; }
    grep -q "^silero_vad.safetensors .*40 tensors .*155,908 parameters.*ok ($work/d5/silero_vad.safetensors)" \
        "$work/out" || { cat "$work/out"; fail "VAD line"; }
    printf '\x01' | dd of="$work/d5/silero_vad.safetensors" bs=1 seek=9000 conv=notrunc 2>/dev/null
    "$GF" models check "$work/d5" >"$work/out" 2>&1; rc=$?
    [ $rc -eq 65 ] && grep -q "$work/d5/silero_vad.safetensors: SHA-256 .* is not the voice activity detector's pinned" \
        "$work/out" || { cat "$work/out"; fail "damaged VAD file: exit $rc"; }
else
    echo "skip: the VAD file in DIR: .cache/vad/silero_vad.safetensors is absent (tools/fetch-vad)"
fi
"$GF" models check "$work/nonexistent" >/dev/null 2>&1; rc=$?
[ $rc -eq 66 ] || fail "no directory: exit $rc"
# the directory from the configuration's models_dir
printf 'models_dir: %s\n' "$work/m" >"$work/cfg.yaml"
"$GF" models check --config "$work/cfg.yaml" >"$work/out" 2>&1 || { cat "$work/out"; fail "models_dir from --config"; }
grep -q '^all good' "$work/out" || fail "config summary"
printf 'models_dri: %s\n' "$work/m" >"$work/bad.yaml"
"$GF" models check --config "$work/bad.yaml" >"$work/out" 2>&1; rc=$?
[ $rc -eq 78 ] && grep -q "models_dri" "$work/out" || fail "bad config: exit $rc"
"$GF" models >/dev/null 2>&1; rc=$?
[ $rc -eq 64 ] || fail "usage: exit $rc"
echo "convert_checkpoints: all checks passed"
