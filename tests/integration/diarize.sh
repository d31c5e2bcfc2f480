#!/bin/bash
# diarize.sh — `gpuflock diarize --local` end to end:
#  1. weight-free mode on ../shared/data/audio/sample.wav: a valid RTTM, the
#     notice on stderr and in the JSON, and its DER against sample.rttm
#     (gpuflock der when built in, else tests/ref/der_frames.py);
#  2. without --local: broker-backed diarize is refused plainly (69);
#  3. bad inputs (missing, empty, not audio) named with non-zero exit while
#     the good file in the same call gets its RTTM; a DIR argument;
#  4. the neural pipeline with random-weight model files (tests/ref/gpu_models.py)
#     and the community-1 PLDA on a 12 s file; --save-intermediates, then
#     `gpuflock cluster` on them gives the same RTTM (every neural check of
#     this script: without torch or the PLDA it reports itself skipped, a
#     "skip: part 4 ..." line that tests/run-tests counts);
#  5. usage errors.
# The checks that need a machine without a CUDA card say so where one is
# present ("skip: ..."), so the summary shows they did not run.
set -u
BUILD=${BUILD:-build}
G="$BUILD/bin/gpuflock"
A=../shared/data/audio
P=../shared/data/community-1/plda
PY=/usr/bin/python3
[ -f "$A/sample.wav" ] || { echo "skip: no $A/sample.wav"; exit 77; }
T=$(mktemp -d --suffix=.gf_diarize_it)
# the shared test data must come out untouched (every run below writes into $T)
shared_sum() { ls -laR "$A" | md5sum; find "$A" -type f -exec md5sum {} + | sort; }
shared_before=$(shared_sum)
check_shared() {
    [ "$(shared_sum)" = "$shared_before" ] \
        || { echo "FAIL: $A was modified"; exit 1; }
}
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Lines of a valid RTTM for uri $2: ten fields, SPEAKER, numbers, duration > 0.
check_rttm() {
    [ -s "$1" ] || fail "$1 missing or empty"
    awk -v uri="$2" 'NF != 10 || $1 != "SPEAKER" || $2 != uri || $3 != 1 ||
        $4 !~ /^[0-9]+\.[0-9]+$/ || $5 !~ /^[0-9]+\.[0-9]+$/ || $5 + 0 <= 0 ||
        $6 != "<NA>" || $8 !~ /^SPEAKER_[0-9][0-9]$/ { print "bad line " NR ": " $0; bad = 1 }
        END { exit bad }' "$1" || fail "$1 is not a valid RTTM"
}

der() {
    if "$G" der --help >/dev/null 2>&1; then
        "$G" der "$1" "$2"
    else
        "$PY" tests/ref/der_frames.py "$1" "$2"
    fi
}

# 1. weight-free mode
"$G" diarize --local --models "$T/no-models" --out "$T/wf" --json "$A/sample.wav" \
    >"$T/wf.out" 2>"$T/wf.err" || { cat "$T/wf.err"; fail "weight-free run exited $?"; }
check_rttm "$T/wf/sample.rttm" sample
grep -q "weight-free mode: no model files in $T/no-models" "$T/wf.err" || fail "no notice on stderr"
grep -q "(weight-free mode)" "$T/wf.out" || fail "no notice in the summary line"
grep -q '"mode":"weight-free"' "$T/wf/sample.json" || fail "JSON mode"
grep -q '"reason":"cpu card"' "$T/wf/sample.json" || fail "JSON devstats"
grep -q '"notice":"weight-free mode: no model files in' "$T/wf/sample.json" || fail "JSON notice"
grep -q "windows" "$T/wf.err" || fail "no progress lines"
ls "$T/wf" | grep -q tmp && fail "temporary file left in --out"
der "$A/sample.rttm" "$T/wf/sample.rttm" | tee "$T/der.txt"
d=$(awk '/^TOTAL/ { print $NF "%" } /^DER / { print $2 }' "$T/der.txt" | head -1)
[ -n "$d" ] || fail "no DER in: $(cat "$T/der.txt")"
echo "ok: weight-free RTTM, notice, DER $d"

# the same in batches of 2 windows (11 batches, each decoded while the one before runs)
printf 'worker:\n  batch_size: 2\n' > "$T/b2.yaml"
"$G" diarize --local --config "$T/b2.yaml" --models "$T/no-models" --out "$T/wf2" "$A/sample.wav" \
    >/dev/null 2>&1 || fail "weight-free run in batches of 2"
cmp "$T/wf/sample.rttm" "$T/wf2/sample.rttm" || fail "batches of 2 give other turns (weight-free)"
echo "ok: weight-free turns identical in batches of 2 and of 32"

# forced speaker count
"$G" diarize --local --models "$T/no-models" --out "$T/n3" --num-speakers 3 "$A/sample.wav" \
    >/dev/null 2>&1 || fail "--num-speakers run"
[ "$(awk '{print $8}' "$T/n3/sample.rttm" | sort -u | wc -l)" -eq 3 ] || fail "--num-speakers 3"
echo "ok: --num-speakers"

# 2. no broker diarize job kind yet
"$G" diarize --out "$T/u" "$A/sample.wav" 2>"$T/nolocal.err"
rc=$?
[ $rc -eq 69 ] || fail "without --local: exit $rc, want 69"
grep -q -- "--local" "$T/nolocal.err" || fail "no --local suggestion"
echo "ok: without --local exits 69"

# --gpu N needs that card; --any falls back to the CPU (only where there is no GPU)
if [ ! -e /dev/nvidia0 ]; then
    "$G" diarize --local --gpu 0 --models "$T/models-none" --out "$T/gpu-wf" "$A/sample.wav" >/dev/null 2>&1
    [ $? -eq 0 ] || fail "--gpu 0 in weight-free mode should run on the CPU"
    echo "ok: --gpu in weight-free mode runs on the CPU"
else
    echo "skip: --gpu 0 in weight-free mode on the CPU: this machine has a CUDA card (/dev/nvidia0)"
fi

# 3. bad inputs beside a good one; a directory argument
mkdir -p "$T/in"
cp "$A/sample.wav" "$T/in/good.wav"
: >"$T/in/empty.wav"
printf 'this is not audio\n' >"$T/in/notes.wav"
"$G" diarize --local --models "$T/no-models" --out "$T/bad" "$T/in/missing.wav" \
    "$T/in/empty.wav" "$T/in/notes.wav" "$T/in/good.wav" >"$T/bad.out" 2>"$T/bad.err"
rc=$?
[ $rc -ne 0 ] || fail "bad inputs: exit 0"
check_rttm "$T/bad/good.rttm" good
for f in missing empty notes; do
    grep -q "$T/in/$f.wav" "$T/bad.err" || fail "$f.wav not named in errors"
    [ ! -e "$T/bad/$f.rttm" ] || fail "RTTM written for $f.wav"
done
grep "$T/in/missing.wav" "$T/bad.err" | grep -qi "no such file" || fail "missing: reason"
grep "$T/in/empty.wav" "$T/bad.err" | grep -qi "empty\|zero\|no audio\|length" || fail "empty: reason"
grep "$T/in/notes.wav" "$T/bad.err" | grep -qi "format\|recogni" || fail "not audio: reason"
echo "ok: bad inputs named (exit $rc), good file diarized"

mkdir -p "$T/dir"
cp "$A/sample.wav" "$T/dir/a.wav"
cp "$A/sample.wav" "$T/dir/b.WAV"
printf 'x\n' >"$T/dir/readme.txt"
"$G" diarize --local --models "$T/no-models" "$T/dir" >/dev/null 2>&1 || fail "DIR run"
check_rttm "$T/dir/a.rttm" a
check_rttm "$T/dir/b.rttm" b
[ ! -e "$T/dir/readme.rttm" ] || fail "non-audio file in DIR diarized"
mkdir -p "$T/emptydir"
"$G" diarize --local --models "$T/no-models" "$T/emptydir" 2>"$T/emptydir.err" && fail "empty DIR: exit 0"
grep -q "no audio files" "$T/emptydir.err" || fail "empty DIR message"
echo "ok: DIR arguments"

# 5. usage errors
"$G" diarize --local --out "$T/u" --num-speakers 2 --min-speakers 1 "$A/sample.wav" 2>/dev/null
[ $? -eq 64 ] || fail "--num-speakers with --min-speakers"
"$G" diarize --local 2>/dev/null
[ $? -eq 64 ] || fail "no FILE"
"$G" diarize --local --out "$T/u" --bogus "$A/sample.wav" 2>/dev/null
[ $? -eq 64 ] || fail "unknown option"
echo "ok: usage errors"

# 4. the neural pipeline on random weights
why=""
"$PY" -c 'import torch, numpy' 2>/dev/null || why="$PY cannot import torch and numpy (tests/ref/gpu_models.py writes the models)"
[ -d "$P" ] || why="${why:+$why; }no PLDA at $P"
if [ -n "$why" ]; then
    echo "skip: part 4 (the neural pipeline on random weights, --save-intermediates, gpuflock cluster): $why"
    check_shared
    exit 0
fi
"$PY" tests/ref/gpu_models.py "$T/models" 3 >/dev/null || fail "gpu_models.py"
cp -r "$P" "$T/models/plda"
sox "$A/sample.wav" "$T/short.wav" trim 5 12 2>/dev/null \
    || "$PY" -c "
import wave, sys
r = wave.open('$A/sample.wav'); w = wave.open('$T/short.wav', 'w')
w.setparams(r.getparams()); r.readframes(5 * 16000); w.writeframes(r.readframes(12 * 16000))"
"$G" diarize --local --models "$T/models" --out "$T/nn" --json --save-intermediates "$T/inter" \
    "$T/short.wav" >"$T/nn.out" 2>"$T/nn.err" || { cat "$T/nn.err"; fail "neural run"; }
check_rttm "$T/nn/short.rttm" short
grep -q "weight-free" "$T/nn.err" "$T/nn.out" && fail "neural run says weight-free"
grep -q '"mode":"neural"' "$T/nn/short.json" || fail "JSON mode neural"
"$PY" - "$T/inter" <<'EOF' || fail "intermediate shapes"
import sys, numpy as np
d = sys.argv[1]
lg = np.load(d + "/segmentation_logits.npy")
sg = np.load(d + "/segmentations.npy")
em = np.load(d + "/embeddings.npy")
assert lg.shape == (3, 589, 7) and lg.dtype == np.float32, lg.shape
assert sg.shape == (3, 589, 3) and set(np.unique(sg)) <= {0.0, 1.0}, sg.shape
assert em.shape == (3, 3, 256), em.shape
# hard powerset decoding of the logits is the segmentation
ps = np.array([[0,0,0],[1,0,0],[0,1,0],[0,0,1],[1,1,0],[1,0,1],[0,1,1]], np.float32)
assert (ps[lg.argmax(-1)] == sg).all()
# NaN exactly where a speaker is inactive in the window
act = sg.sum(1) > 0
nan = np.isnan(em).all(-1)
assert (act == ~nan).all() and np.isfinite(em[act]).all()
print("intermediates ok:", lg.shape, sg.shape, em.shape, int(act.sum()), "embeddings")
EOF
"$G" cluster --segmentations "$T/inter/segmentations.npy" --embeddings "$T/inter/embeddings.npy" \
    --plda "$T/models/plda" --uri short -o "$T/cluster.rttm" || fail "gpuflock cluster"
cmp "$T/cluster.rttm" "$T/nn/short.rttm" || fail "cluster on the saved intermediates differs"
echo "ok: neural pipeline on random weights; gpuflock cluster reproduces its RTTM"
# the community-1 knobs: recorded in the JSON; the same knobs on `cluster`
# over the saved intermediates give the same turns; the configuration's
# diarize: section is the same as the options
params_are() {   # JSON THRESHOLD FA FB MIN_OFF EXCLUDE [STEP]
    "$PY" - "$@" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))["parameters"]
c, s = p["clustering"], p["segmentation"]
assert (c["threshold"], c["Fa"], c["Fb"]) == tuple(float(x) for x in sys.argv[2:5]), p
step = float(sys.argv[7]) if len(sys.argv) > 7 else 0.1
assert s["min_duration_off"] == float(sys.argv[5]) and s["step"] == step, p
assert p["embedding_exclude_overlap"] == (sys.argv[6] == "true"), p
EOF
}
params_are "$T/nn/short.json" 0.6 0.07 0.8 0 true || fail "JSON parameters (defaults)"
K="--clustering-threshold 0.3 --Fa 0.2 --Fb 1.2 --min-duration-off 0.5"
"$G" diarize --local --models "$T/models" --out "$T/nk" --json --save-intermediates "$T/ik" \
    $K --no-embedding-exclude-overlap "$T/short.wav" >/dev/null 2>"$T/nk.err" || fail "knobs: $(cat "$T/nk.err")"
params_are "$T/nk/short.json" 0.3 0.2 1.2 0.5 false || fail "JSON parameters (given)"
"$G" cluster --segmentations "$T/ik/segmentations.npy" --embeddings "$T/ik/embeddings.npy" \
    --plda "$T/models/plda" --uri short $K -o "$T/ck.rttm" || fail "cluster with the knobs"
cmp "$T/ck.rttm" "$T/nk/short.rttm" || fail "cluster with the same knobs differs from diarize's"
printf 'diarize:\n  clustering: {threshold: 0.3, Fa: 0.2, Fb: 1.2}\n  segmentation: {min_duration_off: 0.5}\n  embedding_exclude_overlap: false\n' >"$T/knobs.yaml"
"$G" diarize --local --config "$T/knobs.yaml" --models "$T/models" --out "$T/nc" "$T/short.wav" \
    >/dev/null 2>&1 || fail "knobs from the configuration"
cmp "$T/nc/short.rttm" "$T/nk/short.rttm" || fail "the configuration's knobs differ from the options'"
"$G" cluster --config "$T/knobs.yaml" --segmentations "$T/ik/segmentations.npy" \
    --embeddings "$T/ik/embeddings.npy" --plda "$T/models/plda" --uri short -o "$T/cc.rttm" \
    || fail "cluster with the configuration's knobs"
cmp "$T/cc.rttm" "$T/nk/short.rttm" || fail "cluster: the configuration's knobs differ"
for bad in "--clustering-threshold 0" "--Fa -1" "--Fb x" "--min-duration-off -2" \
           "--segmentation-step 0.0005" "--segmentation-step 0.005" "--segmentation-step 1.5" \
           "--segmentation-step 0.1234"; do
    "$G" diarize --local --models "$T/models" --out "$T/nb" $bad "$T/short.wav" >/dev/null 2>"$T/bad.err"
    rc=$?; [ "$rc" = 64 ] && grep -q "^gpuflock diarize: --" "$T/bad.err" || fail "$bad: rc $rc $(cat "$T/bad.err")"
done
# segmentation_step: windows 0.5 s apart (12 s: 5 windows, not 3); `cluster`
# with the same step reproduces the turns from the intermediates; the
# configuration's key is the option's
"$G" diarize --local --models "$T/models" --out "$T/ns" --json --save-intermediates "$T/is" \
    --segmentation-step 0.05 "$T/short.wav" >/dev/null 2>"$T/ns.err" || fail "step: $(cat "$T/ns.err")"
params_are "$T/ns/short.json" 0.6 0.07 0.8 0 true 0.05 || fail "JSON parameters (step 0.05)"
grep -q '"windows":5,' "$T/ns/short.json" || fail "step 0.05: not 5 windows: $(grep -o '"windows":[0-9]*' "$T/ns/short.json")"
"$PY" -c "import numpy as np, sys; s = np.load(sys.argv[1]); assert s.shape == (5, 589, 3), s.shape" \
    "$T/is/segmentations.npy" || fail "step 0.05: intermediates"
"$G" cluster --segmentations "$T/is/segmentations.npy" --embeddings "$T/is/embeddings.npy" \
    --plda "$T/models/plda" --uri short --segmentation-step 0.05 -o "$T/cs.rttm" || fail "cluster --segmentation-step"
cmp "$T/cs.rttm" "$T/ns/short.rttm" || fail "cluster with the same step differs from diarize's"
printf 'diarize:\n  segmentation_step: 0.05\n' >"$T/step.yaml"
"$G" diarize --local --config "$T/step.yaml" --models "$T/models" --out "$T/nsc" "$T/short.wav" \
    >/dev/null 2>&1 || fail "segmentation_step from the configuration"
cmp "$T/nsc/short.rttm" "$T/ns/short.rttm" || fail "the configuration's segmentation_step differs"
echo "ok: the community-1 knobs, in the JSON, on cluster, from the configuration; segmentation_step"
# the community-1 outputs: the exclusive diarization, the speakers'
# centroids, an overlap flag per turn; the same through `cluster`'s turns
"$G" diarize --local --models "$T/models" --out "$T/nx" --json --exclusive --speaker-embeddings \
    "$T/short.wav" >/dev/null 2>"$T/nx.err" || fail "--exclusive: $(cat "$T/nx.err")"
cmp "$T/nx/short.rttm" "$T/nn/short.rttm" || fail "--exclusive changed the regular turns"
"$PY" - "$T/nx" <<'EOF' || fail "the community-1 outputs"
import json, sys, numpy as np
d = sys.argv[1]
def turns(path):
    out = []
    for line in open(path):
        f = line.split()
        out.append((float(f[3]), float(f[3]) + float(f[4]), f[7]))
    return out
reg, exc = turns(d + "/short.rttm"), turns(d + "/short.exclusive.rttm")
assert exc, "no exclusive turns"
for i, a in enumerate(exc):                      # one speaker at a time
    for b in exc[i + 1:]:
        assert not (a[0] < b[1] - 1e-9 and b[0] < a[1] - 1e-9), (a, b)
names = sorted({t[2] for t in reg})
assert {t[2] for t in exc} <= set(names)
spk = np.load(d + "/short.speakers.npy")
assert spk.shape == (len(names), 256) and spk.dtype == np.float32, spk.shape
j = json.load(open(d + "/short.json"))
assert len(j["speaker_embeddings"]) == len(names)
assert np.allclose(np.array(j["speaker_embeddings"], np.float32), spk)
assert [(t["start"], t["speaker"]) for t in j["exclusive_turns"]] == [(round(a, 6), s) for a, _, s in exc]
for t in j["turns"]:                             # overlap: another speaker meets it
    want = any(o[2] != t["speaker"] and o[0] < t["end"] and t["start"] < o[1] for o in reg)
    assert t["overlap"] == want, t
print("exclusive ok:", len(reg), "turns,", len(exc), "exclusive,", spk.shape)
EOF
printf 'worker:\n  batch_size: 1\n' > "$T/b1.yaml"
"$G" diarize --local --config "$T/b1.yaml" --models "$T/models" --out "$T/nn1" \
    --save-intermediates "$T/inter1" "$T/short.wav" >/dev/null 2>&1 || fail "neural run in batches of 1"
cmp "$T/nn/short.rttm" "$T/nn1/short.rttm" || fail "batches of 1 give other turns (neural)"
# the networks' GEMMs see other shapes, so the floats may move in their last bits
"$PY" - "$T/inter" "$T/inter1" <<'EOF' || fail "batches of 1 give other intermediates"
import sys, numpy as np
a, b = sys.argv[1], sys.argv[2]
assert (np.load(a + "/segmentations.npy") == np.load(b + "/segmentations.npy")).all()
for f, tol in (("segmentation_logits", 1e-4), ("embeddings", 1e-5)):
    x, y = np.load(a + "/" + f + ".npy"), np.load(b + "/" + f + ".npy")
    assert (np.isnan(x) == np.isnan(y)).all(), f
    assert np.nanmax(np.abs(x - y)) <= tol, (f, np.nanmax(np.abs(x - y)))
EOF
echo "ok: neural turns identical in batches of 1 and of 32, intermediates within float noise"
if [ ! -e /dev/nvidia0 ]; then
    "$G" diarize --local --gpu 0 --models "$T/models" "$T/short.wav" 2>"$T/gpu.err"
    rc=$?
    [ $rc -eq 69 ] || fail "--gpu 0 without a card: exit $rc, want 69"
    grep -q "no usable CUDA card 0" "$T/gpu.err" || fail "--gpu 0 message"
    "$G" diarize --local --any --models "$T/models" --out "$T/any" "$T/short.wav" 2>"$T/any.err" \
        || fail "--any without a card should run on the CPU"
    cmp "$T/any/short.rttm" "$T/nn/short.rttm" || fail "--any on the CPU differs"
    echo "ok: --gpu 0 without a card exits 69, --any falls back to the CPU"
else
    echo "skip: --gpu 0 without a card, --any on the CPU (neural): this machine has a CUDA card (/dev/nvidia0)"
fi
check_shared
