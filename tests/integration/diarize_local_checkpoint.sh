#!/bin/bash
# gpuflock diarize --local --checkpoint-dir: a run killed with SIGKILL at
# random instants over ten minutes of audio, then the same command again,
# goes on from its last checkpoint and gives the RTTM (and JSON turns) of a
# run that was never stopped; the checkpoint goes with the recording done.
# A checkpoint of other audio, or a damaged one, is not reused (said) and
# the run starts at the first window; nothing crashes. An output a run
# interrupted after it was written is the same command's to replace (its
# record in DIR); any other file there is still refused. Weight-free mode (no
# model files): the trained VAD where set-up fetched it.
set -uo pipefail
BUILD=${BUILD:-build}
G="$PWD/$BUILD/bin/gpuflock"
A=../shared/data/audio
[ -f "$A/sample.wav" ] || { echo "skip: no $A/sample.wav (../shared/data)"; exit 77; }
command -v sox >/dev/null || { echo "skip: sox not installed (tools/setup-deps)"; exit 77; }
T=$(mktemp -d --suffix=.gf-local-ckpt)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# ten minutes: the sample twenty times
sox $(for _ in $(seq 20); do echo "$A/sample.wav"; done) "$T/ten.wav" || fail "sox"
# exec: a run put in the background is gpuflock itself, so that kill reaches it
run() { exec "$G" diarize --local --models "$T/none" --json --checkpoint-dir "$T/ck" --checkpoint-s 1 "$@"; }
"$G" diarize --local --models "$T/none" --json --out "$T/ref" "$T/ten.wav" >/dev/null 2>&1 ||
    fail "the uninterrupted run"
turns() { python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["turns"]))' "$1"; }

# killed three times, each after a checkpoint and a random while more
went=0
for k in 1 2 3; do
    run --out "$T/out" "$T/ten.wav" >"$T/run$k.log" 2>&1 &
    pid=$!
    for _ in $(seq 400); do ls "$T"/ck/*.ckpt >/dev/null 2>&1 && break; sleep 0.01; done
    sleep "0.$((RANDOM % 6))"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    [ -e "$T/out/ten.rttm" ] && break   # it finished first
    grep -q "went on from its checkpoint at window" "$T/run$k.log" && went=$((went + 1))
done
if [ ! -e "$T/out/ten.rttm" ]; then
    (run --out "$T/out" "$T/ten.wav") >"$T/last.log" 2>&1 || fail "the last run: $(cat "$T/last.log")"
    grep -q "went on from its checkpoint at window" "$T/last.log" && went=$((went + 1))
fi
[ "$went" -ge 1 ] || fail "no run went on from a checkpoint: $(cat "$T"/*.log)"
cmp -s "$T/ref/ten.rttm" "$T/out/ten.rttm" || fail "the RTTM differs from the uninterrupted run's"
[ "$(turns "$T/ref/ten.json")" = "$(turns "$T/out/ten.json")" ] || fail "the JSON turns differ"
ls "$T"/ck/*.ckpt >/dev/null 2>&1 && fail "the checkpoint outlived its recording"

# a checkpoint of other audio under this recording's name: not reused
run --out "$T/o2" "$T/ten.wav" >"$T/a.log" 2>&1 &
pid=$!
for _ in $(seq 400); do ls "$T"/ck/*.ckpt >/dev/null 2>&1 && break; sleep 0.01; done
kill -KILL "$pid"; wait "$pid" 2>/dev/null
ls "$T"/ck/*.ckpt >/dev/null 2>&1 || fail "no checkpoint to test with"
sox "$T/ten.wav" "$T/changed.wav" gain -1 && cp "$T/changed.wav" "$T/ten.wav"
"$G" diarize --local --models "$T/none" --out "$T/ref2" "$T/ten.wav" >/dev/null 2>&1 || fail "ref2"
(run --out "$T/o2" "$T/ten.wav") >"$T/b.log" 2>&1 || fail "after the audio changed: $(cat "$T/b.log")"
grep -q "checkpoint not reused: audio file changed" "$T/b.log" || fail "not said: $(cat "$T/b.log")"
grep -q "went on from" "$T/b.log" && fail "a checkpoint of other audio was used"
cmp -s "$T/ref2/ten.rttm" "$T/o2/ten.rttm" || fail "after the audio changed: RTTM differs"

# a damaged checkpoint: not trusted, the run starts over
run --out "$T/o3" "$T/ten.wav" >"$T/c.log" 2>&1 &
pid=$!
for _ in $(seq 400); do ls "$T"/ck/*.ckpt >/dev/null 2>&1 && break; sleep 0.01; done
kill -KILL "$pid"; wait "$pid" 2>/dev/null
f=$(ls "$T"/ck/*.ckpt | head -1)
[ -n "$f" ] || fail "no checkpoint to damage"
size=$(stat -c %s "$f")
[ "$size" -gt 4096 ] || fail "a checkpoint of $size bytes: too small to damage inside"
# four bytes overwritten in the middle of its windows' records, the size kept
printf 'XXXX' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
[ "$(stat -c %s "$f")" = "$size" ] || fail "the damage changed the size"
(run --out "$T/o3" "$T/ten.wav") >"$T/d.log" 2>&1 || fail "after damage: $(cat "$T/d.log")"
grep -q "checkpoint not reused: .*damaged" "$T/d.log" || fail "the damage not said: $(cat "$T/d.log")"
grep -q "went on from" "$T/d.log" && fail "a damaged checkpoint was used"
cmp -s "$T/ref2/ten.rttm" "$T/o3/ten.rttm" || fail "after damage: RTTM differs"
# killed between its JSON and its RTTM (made here: the JSON there, recorded
# as this recording's own, no RTTM): the same command replaces its own JSON;
# a JSON not in the record is still refused (73)
mkdir -p "$T/o4"
sox "$A/sample.wav" "$T/s.wav" 2>/dev/null || cp "$A/sample.wav" "$T/s.wav"
(cd "$T" && "$G" diarize --local --models none --json --out o4 s.wav >/dev/null 2>&1) || fail "o4"
rm "$T/o4/s.rttm"
h=$(printf '%s' "$T/o4/s.rttm" | sha256sum | cut -c1-32)
mkdir -p "$T/ck4"
echo "$(stat -c '%d %i %s' "$T/o4/s.json") $(stat -c '%.9Y' "$T/o4/s.json" | tr -d .) o4/s.json" \
    >"$T/ck4/$h.outs"
(cd "$T" && "$G" diarize --local --models none --json --checkpoint-dir ck4 --out o4 s.wav) \
    >"$T/e.log" 2>&1 || fail "its own JSON was not replaced: $(cat "$T/e.log")"
[ -s "$T/o4/s.rttm" ] || fail "no RTTM after replacing its own JSON"
[ ! -e "$T/ck4/$h.outs" ] || fail "the record outlived its recording"
rm "$T/o4/s.rttm"
(cd "$T" && "$G" diarize --local --models none --json --checkpoint-dir ck4 --out o4 s.wav) \
    >"$T/f.log" 2>&1
[ $? -eq 73 ] && grep -q "s.json exists" "$T/f.log" || fail "a JSON not recorded was not refused: $(cat "$T/f.log")"

# the same record made by another user (a --checkpoint-dir others may write):
# not trusted, the JSON refused
if [ "$(id -u)" = 0 ] && command -v useradd >/dev/null; then
    . tests/integration/lib/users.sh
    if make_users gfckother; then
        rm -f "$T/o4/s.rttm"
        echo "$(stat -c '%d %i %s' "$T/o4/s.json") $(stat -c '%.9Y' "$T/o4/s.json" | tr -d .) o4/s.json" \
            >"$T/ck4/$h.outs"
        chown gfckother "$T/ck4/$h.outs"
        (cd "$T" && "$G" diarize --local --models none --json --checkpoint-dir ck4 --out o4 s.wav) \
            >"$T/g.log" 2>&1
        [ $? -eq 73 ] || fail "another user's record was trusted: $(cat "$T/g.log")"
    else
        echo "skip: part (another user's record): no useradd here"
    fi
fi

echo "ok: --local --checkpoint-dir: killed runs go on from their checkpoints, the same RTTM; other audio and a damaged checkpoint are not reused; its own outputs of an interrupted run replaced, no other file"
