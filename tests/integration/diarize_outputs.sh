#!/bin/bash
# diarize_outputs.sh — `gpuflock diarize` never loses or overwrites what a
# user owns (cli/diarout.h), with --local and through the broker:
#   - sample.wav, sample.flac, sample.mp3, sample.ogg into one --out: the
#     outputs would meet, refused before any work (64), both inputs named,
#     nothing made; the same for two files of one name from two folders
#   - a reference sample.rttm beside sample.wav (the layout of the test
#     data): `diarize DIR` is refused (73) and the reference kept;
#     --skip-existing leaves the recording out, --overwrite replaces it
#   - a dangling link in an output's place counts as a file there
#   - -r takes a DIR's subfolders and keeps their paths under --out; without
#     it the subfolders left out are said
#   - --files-from LIST and --files-from - (stdin); the same file twice is
#     diarized once
#   - a batch re-run with --skip-existing diarizes only what is missing
#   - --save-intermediates of several recordings: one folder per name
#   - the JSON names its input: path, size, SHA-256 (sha256sum's)
#   - a missing recording alone is one line, before anything is loaded
# Inputs are copies in the test's folder.
. tests/integration/lib/jobs.bash
write_config
echo "models_dir: $T/models" >>"$CFG"
SAMPLE=../shared/data/audio/sample.wav
[ -f "$SAMPLE" ] || { echo "skip: no $SAMPLE"; exit 77; }
trap 'stop_broker; cleanup' EXIT
mkdir -p "$T/models"
digest() { find "$1" -type f -exec md5sum {} + 2>/dev/null | sort; ls -laR "$1" 2>/dev/null | md5sum; }

# ---- refusals before any work, --local and through the broker ----------
mkdir -p "$T/four"
for e in wav flac mp3 ogg; do cp "$SAMPLE" "$T/four/sample.$e"; done
start_broker || exit 1
for how in --local broker; do
    opt=$([ "$how" = --local ] && echo --local)
    gf diarize $opt --out "$T/o-$how" "$T"/four/sample.* >"$T/out" 2>"$T/err"; rc=$?
    [ "$rc" = 64 ] || fail "$how: four into one name: rc $rc: $(cat "$T/err")"
    grep -q "four/sample.flac and .*four/sample.mp3 would both write .*o-$how/sample.rttm" "$T/err" \
        || fail "$how: collision not named: $(cat "$T/err")"
    [ "$(grep -c 'would both write' "$T/err")" = 3 ] || fail "$how: every pair named once: $(cat "$T/err")"
    [ -e "$T/o-$how" ] && fail "$how: --out made for a refused call"
    [ -s "$T/out" ] && fail "$how: work done: $(cat "$T/out")"
    # two folders, one file name, into one --out
    mkdir -p "$T/x1" "$T/x2"; cp "$SAMPLE" "$T/x1/m.wav"; cp "$SAMPLE" "$T/x2/m.wav"
    gf diarize $opt --out "$T/o-$how" "$T/x1/m.wav" "$T/x2/m.wav" >/dev/null 2>"$T/err"; rc=$?
    [ "$rc" = 64 ] && grep -q "x1/m.wav and .*x2/m.wav would both write" "$T/err" \
        || fail "$how: two folders: rc $rc: $(cat "$T/err")"
    # intermediates keep the names apart too
    gf diarize $opt --out "$T/o-$how" --save-intermediates "$T/i-$how" "$T/x1" "$T/x2" \
        >/dev/null 2>"$T/err"; rc=$?
    [ "$rc" = 64 ] || fail "$how: two DIRs of one name into one --out: rc $rc"
done
# the queue saw no job: nothing was submitted
[ -z "$(gf queue --all 2>/dev/null | sed 1d)" ] || fail "jobs submitted for refused calls: $(gf queue --all)"

# ---- a reference beside the recording ---------------------------------
mkdir -p "$T/data"
cp "$SAMPLE" "$T/data/sample.wav"
printf 'SPEAKER sample 1 0.0 1.0 <NA> <NA> ref <NA> <NA>\n' >"$T/data/sample.rttm"
before=$(digest "$T/data")
for opt in --local ""; do
    gf diarize $opt "$T/data" >"$T/out" 2>"$T/err"; rc=$?
    [ "$rc" = 73 ] || fail "${opt:-broker}: over a reference: rc $rc: $(cat "$T/err")"
    grep -q "data/sample.rttm exists (an output of .*data/sample.wav)" "$T/err" \
        || fail "${opt:-broker}: the existing output not named: $(cat "$T/err")"
    grep -q -- "--overwrite replaces them, --skip-existing" "$T/err" || fail "no way out said: $(cat "$T/err")"
    [ "$(digest "$T/data")" = "$before" ] || fail "${opt:-broker}: the reference folder changed"
    gf diarize $opt --skip-existing "$T/data" >"$T/out" 2>"$T/err"; rc=$?
    [ "$rc" = 0 ] || fail "${opt:-broker}: --skip-existing: rc $rc: $(cat "$T/err")"
    grep -q "1 recording left out: its RTTM is there (--skip-existing)" "$T/err" \
        || fail "${opt:-broker}: skip not said: $(cat "$T/err")"
    [ "$(digest "$T/data")" = "$before" ] || fail "${opt:-broker}: --skip-existing changed the folder"
done
gf diarize --overwrite "$T/data" >"$T/out" 2>"$T/err" || fail "--overwrite: $(cat "$T/err")"
grep -q "^SPEAKER sample 1 .* ref " "$T/data/sample.rttm" && fail "--overwrite left the old RTTM"
grep -q "^SPEAKER sample 1 " "$T/data/sample.rttm" || fail "--overwrite: no RTTM"
gf diarize --local --overwrite --skip-existing "$T/data" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 64 ] || fail "--overwrite with --skip-existing: rc $rc"

# a dangling link in the RTTM's place is not written through
mkdir -p "$T/dl"; cp "$SAMPLE" "$T/dl/r.wav"; ln -s "$T/nowhere/target" "$T/dl/r.rttm"
gf diarize --local "$T/dl/r.wav" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 73 ] && [ -L "$T/dl/r.rttm" ] && [ ! -e "$T/nowhere" ] || fail "dangling link: rc $rc: $(cat "$T/err")"

# ---- -r, --files-from, the same file twice -----------------------------
mkdir -p "$T/tree/2024/01" "$T/tree/.hidden"
cp "$SAMPLE" "$T/tree/top.wav"; cp "$SAMPLE" "$T/tree/2024/01/call.wav"
cp "$SAMPLE" "$T/tree/2024/01/top.wav"; cp "$SAMPLE" "$T/tree/.hidden/h.wav"
ln -s "$T/tree" "$T/tree/2024/loop"
gf diarize --local --out "$T/flat" "$T/tree" >"$T/out" 2>"$T/err" || fail "no -r: $(cat "$T/err")"
grep -q "tree: 1 subfolder not searched (-r/--recursive searches them)" "$T/err" \
    || fail "subfolders not said: $(cat "$T/err")"
[ "$(cd "$T/flat" && find . -type f | sort | tr '\n' ' ')" = "./top.rttm " ] || fail "no -r: $(cd "$T/flat" && find .)"
gf diarize --local -r --out "$T/deep" "$T/tree" >"$T/out" 2>"$T/err" || fail "-r: $(cat "$T/err")"
[ "$(cd "$T/deep" && find . -type f | sort | tr '\n' ' ')" = "./2024/01/call.rttm ./2024/01/top.rttm ./top.rttm " ] \
    || fail "-r outputs: $(cd "$T/deep" && find . -type f)"
# beside the inputs, each in its own folder
gf diarize --local --recursive "$T/tree" >/dev/null 2>"$T/err" || fail "-r beside: $(cat "$T/err")"
[ -s "$T/tree/2024/01/call.rttm" ] && [ -s "$T/tree/top.rttm" ] && [ ! -e "$T/tree/.hidden/h.rttm" ] \
    || fail "-r beside: $(find "$T/tree" -name '*.rttm')"
printf '%s\n' "$T/tree/2024/01/call.wav" "" "$T/four/sample.wav" >"$T/list"
gf diarize --local --out "$T/fl" --files-from "$T/list" >"$T/out" 2>"$T/err" || fail "--files-from: $(cat "$T/err")"
[ "$(cd "$T/fl" && ls | tr '\n' ' ')" = "call.rttm sample.rttm " ] || fail "--files-from outputs: $(ls "$T/fl")"
printf '%s\n' "$T/x1/m.wav" | gf diarize --local --out "$T/fs" --files-from - "$T/x1/../x1/m.wav" \
    >"$T/out" 2>"$T/err" || fail "--files-from -: $(cat "$T/err")"
grep -q "m.wav: the same file as .*: diarized once" "$T/err" || fail "the same file twice: $(cat "$T/err")"
[ "$(grep -c ' -> ' "$T/out")" = 1 ] || fail "the same file twice diarized: $(cat "$T/out")"
gf diarize --local --files-from "$T/no-such-list" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 66 ] && grep -q "files-from $T/no-such-list: No such file" "$T/err" || fail "missing list: rc $rc"

# a missing recording alone: said once, nothing loaded (no weight-free notice)
gf diarize --local "$T/no-such.wav" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 66 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "no-such.wav: No such file or directory" "$T/err" \
    || fail "a missing recording: rc $rc: $(cat "$T/err")"

# ---- a batch re-run picks up where it stopped --------------------------
mkdir -p "$T/batch"
for n in a b c; do cp "$SAMPLE" "$T/batch/$n.wav"; done
gf diarize --out "$T/bo" --json --save-intermediates "$T/bi" "$T/batch" >"$T/out" 2>"$T/err" \
    || fail "batch: $(cat "$T/err")"
[ -s "$T/bi/a/segmentations.npy" ] && [ -s "$T/bi/c/embeddings.npy" ] || fail "intermediates: $(find "$T/bi")"
rm "$T/bo/b.rttm" "$T/bo/b.json" "$T/bi/b/"*
keep=$(md5sum "$T/bo/a.rttm" "$T/bo/a.json")
gf diarize --out "$T/bo" --json --save-intermediates "$T/bi" --skip-existing "$T/batch" >"$T/out" 2>"$T/err" \
    || fail "batch re-run: $(cat "$T/err")"
[ "$(grep -c ' -> ' "$T/out")" = 1 ] && grep -q "batch/b.wav: .* -> .*bo/b.rttm" "$T/out" \
    || fail "re-run diarized: $(cat "$T/out")"
grep -q "2 recordings left out: their RTTM is there" "$T/err" || fail "re-run skip: $(cat "$T/err")"
[ "$(md5sum "$T/bo/a.rttm" "$T/bo/a.json")" = "$keep" ] || fail "re-run touched a finished recording"

# ---- the JSON names its input ------------------------------------------
/usr/bin/python3 - "$T/bo/b.json" "$T/batch/b.wav" "$(sha256sum "$T/batch/b.wav" | cut -d' ' -f1)" <<'PY' \
    || fail "JSON input"
import json, os, sys
j = json.load(open(sys.argv[1]))
i = j["input"]
assert i["path"] == os.path.realpath(sys.argv[2]), i
assert i["size"] == os.path.getsize(sys.argv[2]), i
assert i["sha256"] == sys.argv[3], i
PY
ls "$T/bo" "$T/data" | grep -q '\.tmp\.' && fail "temporary files left"
echo "ok: outputs never meet, nothing overwritten without --overwrite, --skip-existing, -r, --files-from, JSON input"
