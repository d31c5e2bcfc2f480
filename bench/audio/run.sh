#!/bin/bash
# bench/audio/run.sh — decoding + resampling throughput and memory.
#
# Converts the same 44.1 kHz stereo WAV, FLAC and MP3 files to 16 kHz mono
# float with gpuflock's audio module (libsndfile + libsoxr HQ, as the pipeline
# reads them) and with sox (`sox IN -t f32 -r 16000 -c 1 -`, its default
# high-quality rate effect), side by side, best of 3 wall-clock runs each, and
# reports seconds of audio per second and the ratio. Then peak resident
# memory of both over a 3-hour file, and of the pipeline's window iterator.
# Files are made here (bench/out/audio/, not committed).
#
#   bench/audio/run.sh [MINUTES]      (default 10; the memory test is 3 hours)
set -eu
cd "$(dirname "$0")/../.."
MIN=${1:-10}
OUT=bench/out/audio
mkdir -p "$OUT"
make -s all >/dev/null
BIN=build/bench/audio/audio_bench   # built by `make all` from bench/audio/audio_bench.c

secs=$((MIN * 60))
for f in wav flac mp3; do
    [ -s "$OUT/in$MIN.$f" ] || "$BIN" synth "$OUT/in$MIN.$f" "$secs" "$f"
done

best() {  # best wall time of 3 runs of "$@", output to /dev/null
    local b=""
    for _ in 1 2 3; do
        local s e t
        s=$(date +%s.%N)
        "$@" >/dev/null 2>"$OUT/last.err" || { echo "FAILED: $* ($(cat "$OUT/last.err"))" >&2; echo 0; return; }
        e=$(date +%s.%N)
        t=$(echo "$e - $s" | bc -l)
        if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
    done
    echo "$b"
}

echo "## decode + resample to 16 kHz mono, $MIN min of 44.1 kHz stereo ($(date -u +%F), $(nproc) cores)"
printf '%-6s %12s %14s %12s %14s %8s\n' format "gpuflock s" "gpuflock x RT" "sox s" "sox x RT" "ratio"
for f in wav flac mp3; do
    in=$OUT/in$MIN.$f
    g=$(best "$BIN" decode "$in")
    if sox --info "$in" >/dev/null 2>&1; then
        s=$(best sox "$in" -t f32 -r 16000 -c 1 -)
        printf '%-6s %12.3f %14.1f %12.3f %14.1f %8.2f\n' "$f" "$g" "$(echo "$secs / $g" | bc -l)" \
            "$s" "$(echo "$secs / $s" | bc -l)" "$(echo "$s / $g" | bc -l)"
    else
        printf '%-6s %12.3f %14.1f %12s %14s %8s\n' "$f" "$g" "$(echo "$secs / $g" | bc -l)" \
            "n/a" "n/a" "n/a"
        echo "       (sox on this machine cannot read $f: no handler in its build)"
    fi
done
echo "ratio = sox time / gpuflock time (above 1: gpuflock faster)"

# Peak memory over a 3-hour file.
BIG=$OUT/three_hours.flac
[ -s "$BIG" ] || "$BIN" synth "$BIG" 10800 flac
echo
echo "## peak resident memory, 3-hour 44.1 kHz stereo FLAC ($(du -h "$BIG" | cut -f1))"
rss() { /usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -1; }
printf '%-44s %10s\n' "what" "peak KiB"
printf '%-44s %10s\n' "gpuflock decode to 16 kHz (stdout)" "$(rss "$BIN" decode "$BIG")"
printf '%-44s %10s\n' "gpuflock 10 s windows every 1 s (pipeline)" "$(rss "$BIN" windows "$BIG")"
printf '%-44s %10s\n' "sox -t f32 -r 16000 -c 1 (stdout)" "$(rss sox "$BIG" -t f32 -r 16000 -c 1 -)"
echo "(whole file at 16 kHz mono float would be $((10800 * 16000 * 4 / 1024)) KiB)"
