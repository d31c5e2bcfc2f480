#!/bin/bash
# der_cli — `gpuflock der` from the command line: a perfect hypothesis, a
# relabelled one (mapping), the table and JSON forms, and its errors with
# their exit statuses and messages: times out of range, files with no
# SPEAKER record, binary files (never echoed to the terminal), empty files.
set -u
BUILD=${BUILD:-build}
G=$BUILD/bin/gpuflock
tmp=$(mktemp -d --suffix=.gf_der_cli)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

SAMPLE=../shared/data/audio/sample.rttm
if [ -r "$SAMPLE" ]; then
    cp "$SAMPLE" "$tmp/ref.rttm"
else
    printf 'SPEAKER s 1 0.5 2.0 <NA> <NA> spk1 <NA> <NA>\nSPEAKER s 1 2.0 3.0 <NA> <NA> spk2 <NA> <NA>\n' >"$tmp/ref.rttm"
fi
# The same turns under other names: DER 0 through the mapping.
awk '$1 == "SPEAKER" { $8 = "hyp_" $8 } { print }' "$tmp/ref.rttm" >"$tmp/hyp.rttm"

out=$("$G" der "$tmp/ref.rttm" "$tmp/hyp.rttm") || fail "der exited $?"
echo "$out"
echo "$out" | grep -q '^TOTAL .* 0\.00$' || fail "relabelled hypothesis should give DER 0.00"

json=$("$G" der "$tmp/ref.rttm" "$tmp/hyp.rttm" --json --collar 0.5 --skip-overlap) || fail "der --json exited $?"
/usr/bin/python3 - "$json" <<'PY' || fail "JSON output"
import json, sys
d = json.loads(sys.argv[1])
assert d["collar"] == 0.5 and d["skip_overlap"] is True, d
f = d["files"][0]
assert f["der"] == 0 and f["total"] > 0, f
assert all(v == k[len("hyp_"):] for k, v in f["mapping"].items()), f["mapping"]
assert d["all"]["der"] == 0
PY

# Half the hypothesis missing: DER > 0.
head -n 3 "$tmp/hyp.rttm" >"$tmp/part.rttm"
"$G" der "$tmp/ref.rttm" "$tmp/part.rttm" | grep -q '^TOTAL .* 0\.00$' && fail "partial hypothesis gave DER 0"

expect_status() {  # STATUS PATTERN ARGS...
    local want=$1 pat=$2; shift 2
    "$G" der "$@" >"$tmp/o" 2>"$tmp/e"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "der $* exited $rc, expected $want ($(cat "$tmp/e"))"
    grep -q -- "$pat" "$tmp/e" "$tmp/o" || fail "der $*: no '$pat' in: $(cat "$tmp/e")"
}
expect_status 0 "usage" --help
expect_status 64 "usage" "$tmp/ref.rttm"
expect_status 64 "collar" "$tmp/ref.rttm" "$tmp/hyp.rttm" --collar -1
expect_status 64 "unknown option" "$tmp/ref.rttm" "$tmp/hyp.rttm" --colar 1
expect_status 66 "missing.rttm" "$tmp/ref.rttm" "$tmp/missing.rttm"
printf 'SPEAKER f 1 0.0 1.0 <NA> <NA> a <NA> <NA>\nSPEAKER f 1 x 1.0 <NA> <NA> a <NA> <NA>\n' >"$tmp/bad.rttm"
expect_status 65 "bad.rttm:2: start 'x'" "$tmp/ref.rttm" "$tmp/bad.rttm"
printf 'SPEAKER f 1 0.0\n' >"$tmp/short.rttm"
expect_status 65 "short.rttm:1: SPEAKER line with 4 fields" "$tmp/short.rttm" "$tmp/hyp.rttm"
printf 'SPEAKER f 1 0.0 -2 <NA> <NA> a <NA> <NA>\n' >"$tmp/neg.rttm"
expect_status 65 "neg.rttm:1: negative duration" "$tmp/neg.rttm" "$tmp/hyp.rttm"
printf 'other 1 0 10\n' >"$tmp/u.uem"
expect_status 65 "no UEM span" "$tmp/ref.rttm" "$tmp/hyp.rttm" --uem "$tmp/u.uem"
printf 'other 1 0\n' >"$tmp/u2.uem"
expect_status 65 "u2.uem:1: UEM line has 3 fields" "$tmp/ref.rttm" "$tmp/hyp.rttm" --uem "$tmp/u2.uem"
printf 'other 1 0 1e308\n' >"$tmp/u3.uem"
expect_status 65 "u3.uem:1: end '1e308' is out of range" "$tmp/ref.rttm" "$tmp/hyp.rttm" --uem "$tmp/u3.uem"

# Times: anything not a finite number from 0 to 1e7 s is refused at its line,
# in either file (before, 1e308 was refused without a file or line and 1e17
# scored as a zero-length turn).
line() { printf 'SPEAKER f 1 %s %s <NA> <NA> a <NA> <NA>\n' "$1" "$2"; }
n=0
for t in "start 1e308 1" "duration 1 1e308" "start 1e308 1e308" "start 1e17 1" \
         "start 10000000.001 0.5" "duration 0.5 1e400" "start inf 1" "duration 1 -inf" \
         "start nan 1" "duration 1 NaN" "start 0x1p80 1"; do
    n=$((n + 1))
    set -- $t
    { line 0.0 1.0; line "$2" "$3"; } >"$tmp/t$n.rttm"
    expect_status 65 "t$n.rttm:2: \(negative \)\?$1 '" "$tmp/ref.rttm" "$tmp/t$n.rttm"
    expect_status 65 "t$n.rttm:2: \(negative \)\?$1 '" "$tmp/t$n.rttm" "$tmp/hyp.rttm"
done
# The largest times allowed are scored, exactly.
{ line 10000000 10000000; } >"$tmp/max.rttm"
out=$("$G" der "$tmp/max.rttm" "$tmp/max.rttm") || fail "times at the bound refused: exit $?"
echo "$out" | grep -q '^TOTAL  *10000000\.000 .* 0\.00$' || fail "bound case: $out"

# A file with no SPEAKER record is not an RTTM: exit 65 naming it, either side.
printf 'These are my notes.\nNo turns here.\n' >"$tmp/notes.rttm"
expect_status 65 "notes.rttm holds no SPEAKER records" "$tmp/notes.rttm" "$tmp/hyp.rttm"
expect_status 65 "notes.rttm holds no SPEAKER records" "$tmp/ref.rttm" "$tmp/notes.rttm"
printf '# only a comment\nSPKR-INFO f 1 <NA> <NA> <NA> unknown a <NA> <NA>\n' >"$tmp/info.rttm"
expect_status 65 "info.rttm holds no SPEAKER records (2 non-blank lines; line 1 begins '#')" \
    "$tmp/ref.rttm" "$tmp/info.rttm"

# Binary files: refused at the first line that is not text, and what is
# printed is plain text (no byte of the file reaches the terminal).
printf 'SPEAKER f 1 0.0 1.0 <NA> <NA> a <NA> <NA>\n\x7fELF\x02\x01\x01\x00\x00\x1b[2J\xff\n' \
    >"$tmp/elf.rttm"
printf 'SPEAKER f 1 0.0 1.0 <NA> <NA> sp\xe9aker <NA> <NA>\n' >"$tmp/latin1.rttm"
printf 'SPEAKER f 1 0.0 1.0 <NA> <NA> a\x1b]0;pwned\x07 <NA> <NA>\n' >"$tmp/esc.rttm"
head -c 4096 /dev/urandom >"$tmp/random.rttm"
gzip -c "$tmp/ref.rttm" >"$tmp/gz.rttm"
expect_status 65 "elf.rttm:2: not text: byte \\\\x7F at column 1 is a control character" \
    "$tmp/ref.rttm" "$tmp/elf.rttm"
expect_status 65 "latin1.rttm:1: not text: byte \\\\xE9 at column 33 is not valid UTF-8" \
    "$tmp/latin1.rttm" "$tmp/hyp.rttm"
expect_status 65 "esc.rttm:1: not text: byte \\\\x1B" "$tmp/ref.rttm" "$tmp/esc.rttm"
expect_status 65 "random.rttm:[0-9]*: not text" "$tmp/random.rttm" "$tmp/hyp.rttm"
expect_status 65 "gz.rttm:1: not text" "$tmp/ref.rttm" "$tmp/gz.rttm"
for f in elf esc random gz; do
    "$G" der "$tmp/ref.rttm" "$tmp/$f.rttm" >"$tmp/o" 2>"$tmp/e"
    LC_ALL=C grep -q '[^[:print:]]' "$tmp/e" "$tmp/o" && fail "$f.rttm: unprintable bytes in the output"
done
printf 'other 1 0 10\x00\n' >"$tmp/bin.uem"
expect_status 65 "bin.uem:1: not text: byte \\\\x00 at column 13" \
    "$tmp/ref.rttm" "$tmp/hyp.rttm" --uem "$tmp/bin.uem"

# UTF-8 labels and a byte order mark are text.
printf '\xef\xbb\xbfSPEAKER f 1 0.0 1.0 <NA> <NA> Zo\xc3\xab <NA> <NA>\n' >"$tmp/utf8.rttm"
printf 'SPEAKER f 1 0.0 1.0 <NA> <NA> \xe8\xaf\xb4 <NA> <NA>\n' >"$tmp/utf8h.rttm"
out=$("$G" der "$tmp/utf8.rttm" "$tmp/utf8h.rttm" --json) || fail "UTF-8 labels refused: exit $?"
/usr/bin/python3 - "$out" <<'PY' || fail "UTF-8 labels: $out"
import json, sys
d = json.loads(sys.argv[1])
assert d["all"]["der"] == 0 and d["files"][0]["mapping"] == {"\u8bf4": "Zo\u00eb"}, d
PY

# An empty file (what a system that found no speech writes) is scored as no
# speech, with a warning: all missed for a hypothesis, all false alarm for a
# reference.
: >"$tmp/empty.rttm"
printf '\n  \n' >"$tmp/blank.rttm"
"$G" der "$tmp/ref.rttm" "$tmp/empty.rttm" >"$tmp/o" 2>"$tmp/e" || fail "empty hypothesis: exit $?"
grep -q "empty.rttm is empty: scored as a hypothesis with no speech" "$tmp/e" || fail "no warning: $(cat "$tmp/e")"
grep -q '^TOTAL .* 100\.00$' "$tmp/o" || fail "empty hypothesis: $(cat "$tmp/o")"
"$G" der "$tmp/blank.rttm" "$tmp/hyp.rttm" >"$tmp/o" 2>"$tmp/e" || fail "blank reference: exit $?"
grep -q "blank.rttm is empty: scored as a reference with no speech" "$tmp/e" || fail "no warning: $(cat "$tmp/e")"
grep -q '^TOTAL  *0\.000 .* 100\.00$' "$tmp/o" || fail "blank reference: $(cat "$tmp/o")"
# An enormous input is refused without being read to its end.
expect_status 65 "larger than 256 MiB" /dev/zero "$tmp/hyp.rttm"
echo "der cli: ok"
