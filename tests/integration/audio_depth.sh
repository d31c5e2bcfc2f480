#!/bin/bash
# audio_depth — WAV files of non-standard sample widths, written here byte by
# byte, through the real programs: what libsndfile reads as a whole-byte
# container (7-bit, 12-bit, 20 valid bits of 24, 24 of 32) decodes to the
# known samples exactly (tests/helpers/fbank_dump, which decodes with
# diar/io/audio) and diarizes; what it cannot decode or what contradicts
# itself (40-bit PCM, 24-bit float, packed 12-bit, 24 valid bits of 16,
# right-justified 7-bit samples) is refused by `gpuflock diarize` with exit
# 65 and a message naming the file and the width. docs/audio.md.
set -u
BUILD=${BUILD:-build}
G=$BUILD/bin/gpuflock
DUMP=$BUILD/tests/helpers/fbank_dump
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "skip: $PY not found"; exit 77; }
[ -x "$DUMP" ] || { echo "skip: $DUMP not built"; exit 77; }
T=$(mktemp -d --suffix=.gf_audio_depth)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# NAME TAG BITS VALID BLOCK_ALIGN CHANNELS JUSTIFY: a 2 s 16 kHz WAV of known
# samples (a sweep over the whole range of VALID bits, both extremes first),
# and NAME.f32, the floats they stand for (sample / 2^(VALID-1)).
"$PY" - "$T" <<'PY' || fail "writing the files"
import math, struct, sys
T = sys.argv[1]
N = 32000

def wav(name, tag, bits, valid, align=0, channels=1, justify="left"):
    sig = valid or bits
    bw = (bits + 7) // 8
    lo, hi = -(1 << (sig - 1)), (1 << (sig - 1)) - 1
    s = [lo, hi] + [round(hi * math.sin(0.001 * i * i / N) * 0.9) for i in range(2, N * channels)]
    data = bytearray()
    for v in s:
        c = v << max(0, 8 * bw - sig) if justify == "left" else v & ((1 << sig) - 1)
        if bw == 1 and justify == "left":
            c += 128  # 8-bit WAV is unsigned
        data += (c & ((1 << (8 * bw)) - 1)).to_bytes(bw, "little")
    align = align or channels * bw
    fmt = struct.pack("<HHIIHH", tag, channels, 16000, 16000 * align, align, bits)
    if tag == 0xFFFE:
        fmt += struct.pack("<HHI", 22, valid, 4) + struct.pack("<I", 1)
        fmt += bytes.fromhex("000010008000 00aa00389b71".replace(" ", ""))
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(data)) + bytes(data) + (b"\0" if len(data) % 2 else b"")
    open(f"{T}/{name}.wav", "wb").write(b"RIFF" + struct.pack("<I", len(body)) + body)
    if channels == 1:
        open(f"{T}/{name}.f32", "wb").write(struct.pack(f"<{N}f", *(v / 2 ** (sig - 1) for v in s)))

wav("pcm7", 1, 7, 0)
wav("pcm12", 1, 12, 0)
wav("ext20in24", 0xFFFE, 24, 20)
wav("ext24in32", 0xFFFE, 32, 24)
wav("pcm16", 1, 16, 0)                 # the standard width, for comparison
wav("right7", 1, 7, 0, justify="right")  # 7-bit samples in the low bits: not WAV
wav("pcm40", 1, 40, 0)
wav("packed12", 1, 12, 0, align=3, channels=2)
wav("ext24in16", 0xFFFE, 16, 24)
# 24-bit IEEE float: a fmt chunk of tag 3 and 24 bits (libsndfile has no decoder)
fmt = struct.pack("<HHIIHH", 3, 1, 16000, 48000, 3, 24)
body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", 3000) + bytes(3000)
open(f"{T}/float24.wav", "wb").write(b"RIFF" + struct.pack("<I", len(body)) + body)
PY

# Decoded exactly: the first 32000 samples at 16 kHz, bit for bit.
for f in pcm7 pcm12 ext20in24 ext24in32 pcm16; do
    "$DUMP" "$T/$f.wav" 0 32000 "$T/$f.got" "$T/$f.feat" 2>"$T/$f.err" ||
        fail "$f.wav: fbank_dump exited $? ($(cat "$T/$f.err"))"
    cmp -s "$T/$f.got" "$T/$f.f32" || fail "$f.wav: decoded samples differ from the known ones"
    echo "$f.wav: 32000 samples decoded exactly"
done

# The pipeline takes them (weight-free mode: no model files).
"$G" diarize --local --models "$T/no-models" --out "$T/out" "$T/pcm7.wav" "$T/ext20in24.wav" \
    >"$T/d.out" 2>"$T/d.err" || fail "diarize of 7-bit and 20-bit files exited $? ($(cat "$T/d.err"))"
[ -f "$T/out/pcm7.rttm" ] && [ -f "$T/out/ext20in24.rttm" ] || fail "no RTTM: $(ls "$T/out")"

# Refused by name, exit 65, whatever else is on the command line.
expect_refused() {  # FILE PATTERN
    "$G" diarize --local --models "$T/no-models" --out "$T/out" "$T/$1.wav" >"$T/o" 2>"$T/e"
    local rc=$?
    [ "$rc" -eq 65 ] || fail "$1.wav: diarize exited $rc, expected 65 ($(cat "$T/e"))"
    grep -q -- "audio file $T/$1.wav: .*$2" "$T/e" || fail "$1.wav: no '$2' in: $(cat "$T/e")"
    [ ! -e "$T/out/$1.rttm" ] || fail "$1.wav: an RTTM was written"
    echo "$1.wav: refused: $(grep -o "audio file .*" "$T/e" | head -1)"
}
expect_refused pcm40 "cannot decode 40-bit integer PCM (WAV) with libsndfile"
expect_refused float24 "cannot decode 24-bit IEEE float (WAV) with libsndfile"
expect_refused packed12 "malformed: block align 3 for 2 channels of 12-bit integer PCM (WAV)"
expect_refused ext24in16 "malformed: 24 valid bits in 16-bit samples"
expect_refused right7 "malformed: the sample at frame 1 (channel 1) has bits set below its 7 valid bits of 8"
"$DUMP" "$T/right7.wav" 0 32000 "$T/r.got" "$T/r.feat" 2>/dev/null && fail "fbank_dump decoded right7.wav"
echo "audio depth: ok"
