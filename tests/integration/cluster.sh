#!/bin/bash
# cluster.sh — `gpuflock cluster` on the community-1 fixtures: the RTTM
# equals pipeline_expected.rttm turn for turn (times within 1 ms); JSON
# output; the PLDA found through --config's models_dir; the same RTTM for
# any --threads; bad inputs give
# clear errors with exit 64/65/66 and leave no output file behind.
set -u
BUILD=${BUILD:-build}
G="$BUILD/bin/gpuflock"
F=../shared/data/fixtures/community-1
P=../shared/data/community-1/plda
[ -f "$F/pipeline_segmentation_data.npy" ] || { echo "skip: no fixtures at $F"; exit 77; }
T=$(mktemp -d --suffix=.gf_cluster_it)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
SEG="$F/pipeline_segmentation_data.npy"
EMB="$F/pipeline_embeddings_data.npy"

# 1. parity with the reference RTTM
"$G" cluster --segmentations "$SEG" --embeddings "$EMB" --plda "$P" --uri pipeline \
    -o "$T/out.rttm" || fail "cluster exited $?"
[ "$(wc -l <"$T/out.rttm")" -eq "$(grep -c . "$F/pipeline_expected.rttm")" ] || fail "turn count"
paste -d' ' "$T/out.rttm" "$F/pipeline_expected.rttm" | awk '
    { d1 = $4 - $14; d2 = $5 - $15; if (d1 < 0) d1 = -d1; if (d2 < 0) d2 = -d2
      if ($1 != "SPEAKER" || $2 != $12 || $8 != $18 || d1 > 0.001 || d2 > 0.001) {
          print "turn " NR " differs: " $0; bad = 1 } }
    END { exit bad }' || fail "RTTM differs from the reference"
echo "ok: RTTM matches pipeline_expected.rttm"

# 2. JSON form, default uri from the file name, stdout
"$G" cluster --segmentations "$SEG" --embeddings "$EMB" --plda "$P" --json >"$T/out.json" \
    || fail "json run"
grep -q '"speaker":"SPEAKER_01"' "$T/out.json" || grep -q '"speaker": "SPEAKER_01"' "$T/out.json" \
    || fail "JSON has no SPEAKER_01"
grep -q 'pipeline_segmentation_data' "$T/out.json" || fail "default uri"
[ "$(grep -c '"start"' "$T/out.json")" -eq 7 ] || fail "JSON turn count"
echo "ok: JSON"

# 3. the PLDA through the configuration's models_dir
mkdir -p "$T/models" && ln -s "$(cd "$P" && pwd)" "$T/models/plda"
printf 'models_dir: %s\n' "$T/models" >"$T/cfg.yaml"
"$G" cluster --config "$T/cfg.yaml" --segmentations "$SEG" --embeddings "$EMB" --uri pipeline \
    -o "$T/cfg.rttm" || fail "config run exited $?"
cmp -s "$T/cfg.rttm" "$T/out.rttm" || fail "config run differs"
echo "ok: PLDA from models_dir"

# 3b. any host thread count gives the same bytes; 0 is a usage error
for n in 1 3; do
    "$G" cluster --segmentations "$SEG" --embeddings "$EMB" --plda "$P" --uri pipeline \
        --threads $n -o "$T/threads$n.rttm" || fail "--threads $n exited $?"
    cmp -s "$T/threads$n.rttm" "$T/out.rttm" || fail "--threads $n differs"
done
"$G" cluster --segmentations "$SEG" --embeddings "$EMB" --plda "$P" --threads 0 \
    >/dev/null 2>&1; [ $? -eq 64 ] || fail "--threads 0 must be a usage error"
echo "ok: --threads"

# 4. speaker constraints
"$G" cluster --segmentations "$SEG" --embeddings "$EMB" --plda "$P" --max-speakers 1 -o "$T/one.rttm" \
    || fail "max-speakers run"
[ "$(awk '{print $8}' "$T/one.rttm" | sort -u | wc -l)" -eq 1 ] || fail "max-speakers 1"
"$G" cluster --segmentations "$SEG" --embeddings "$EMB" --plda "$P" --num-speakers 2 --min-speakers 1 \
    >/dev/null 2>&1; [ $? -eq 64 ] || fail "num + min must be a usage error"
echo "ok: constraints"

# 5. errors: status, message naming the input, no output left behind
expect() {   # expect STATUS PATTERN -- ARGS...
    local want=$1 pat=$2; shift 3
    rm -f "$T/err.rttm"
    "$G" cluster "$@" -o "$T/err.rttm" 2>"$T/err.txt"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "exit $rc, want $want for: $* ($(cat "$T/err.txt"))"
    grep -q -- "$pat" "$T/err.txt" || fail "message lacks '$pat': $(cat "$T/err.txt")"
    [ ! -e "$T/err.rttm" ] || fail "output written despite error"
}
expect 66 "no_such.npy" -- --segmentations "$T/no_such.npy" --embeddings "$EMB" --plda "$P"
expect 65 "expected shape" -- --segmentations "$SEG" --embeddings "$F/pipeline_train_embeddings.npy" --plda "$P"
expect 65 "expected shape" -- --segmentations "$F/powerset_hard_output.npy" --embeddings "$EMB" --plda "$P"
"$BUILD/tests/helpers/npy_nan" "$EMB" "$T/nan.npy" 3 1 || fail "helper"
expect 65 "NaN embedding for a speaker active" -- --segmentations "$SEG" --embeddings "$T/nan.npy" --plda "$P"
head -c 1000 "$SEG" >"$T/trunc.npy"
expect 65 "truncated" -- --segmentations "$T/trunc.npy" --embeddings "$EMB" --plda "$P"
expect 66 "xvec_transform.npz" -- --segmentations "$SEG" --embeddings "$EMB" --plda "$T/nowhere"
mkdir -p "$T/badplda" && cp "$P/plda.npz" "$T/badplda/" && echo garbage >"$T/badplda/xvec_transform.npz"
expect 65 "xvec_transform.npz" -- --segmentations "$SEG" --embeddings "$EMB" --plda "$T/badplda"
expect 64 "required" -- --embeddings "$EMB"
# weight-free intermediates (no model files): said for what they are
"$G" diarize --local --models "$T/no-models" --out "$T/wfo" --save-intermediates "$T/wfi" \
    ../shared/data/audio/sample.wav >/dev/null 2>&1 || fail "weight-free intermediates"
[ -e "$T/wfi/segmentation_logits.npy" ] && fail "weight-free mode wrote logits"
expect 65 "40-dimensional embeddings (filterbank statistics: the intermediates of .diarize. in weight-free mode" \
    -- --segmentations "$T/wfi/segmentations.npy" --embeddings "$T/wfi/embeddings.npy" --plda "$P"
# --gpu needs a CUDA card of the configuration
printf 'devices:\n  - {index: 0, kind: cpu, lock: %s}\n' "$T/card0.lock" >"$T/cpu.yaml"
expect 69 "declared CPU card" -- --segmentations "$SEG" --embeddings "$EMB" --plda "$P" --config "$T/cpu.yaml" --gpu 0
expect 69 "not in the configuration" -- --segmentations "$SEG" --embeddings "$EMB" --plda "$P" --config "$T/cpu.yaml" --gpu 3
expect 64 "expected an integer >= 0" -- --segmentations "$SEG" --embeddings "$EMB" --plda "$P" --gpu x
echo "ok: errors"
exit 0
