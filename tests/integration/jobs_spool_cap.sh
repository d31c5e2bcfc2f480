#!/bin/bash
# jobs_spool_cap.sh — spool.max_bytes caps each job's captured stdout and
# stderr (issue 21: one job writing 8 MB filled a small state_dir and stopped
# the broker for everyone). With a cap of 1M, a job writing 8 MB keeps
# exactly its first 1 MiB plus one marker line, completes on its own (exit
# 0: it was never blocked nor killed, and its writes all succeeded), and
# `show` (and --json) says how much was cut; stderr the same; output under
# the cap is kept byte for byte, NUL bytes included; a cap of 0 keeps all.
. tests/integration/lib/jobs.bash
start_with_cap() {
    stop_broker
    write_config
    printf 'spool:\n  max_bytes: %s\n' "$1" >> "$CFG"
    start_broker || exit 1
}
stat_of() {  # ID KEY: the result's statistic, '' when absent
    gf show "$1" --json | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['stats'].get('$2', ''))"
}
MiB=1048576
# 8 MiB of every byte value (NULs among them), not ending in a newline at the cut
/usr/bin/python3 -c "
import sys
b = bytes((i * 7 + i // 256) & 0xff for i in range(256 * 1024)) * 32
sys.stdout.buffer.write(b)" > "$T/big"
[ "$(stat -c %s "$T/big")" = $((8 * MiB)) ] || fail "test data"
marker="[gpuflock: output cut after $MiB bytes (spool.max_bytes); $((7 * MiB)) more bytes discarded]"

# the kept part is the output's first MiB; what follows is the marker line
# (on a line of its own) and nothing else
check_cut() {  # SPOOL_FILE
    local f=$1
    cmp -n "$MiB" "$f" "$T/big" || fail "$f: the first MiB differs from the output"
    tail -c +$((MiB + 1)) "$f" > "$T/rest"
    local want="$marker"
    [ "$(head -c "$MiB" "$T/big" | tail -c 1 | od -An -c | tr -d ' ')" = '\n' ] || want=$'\n'"$marker"
    printf '%s\n' "$want" > "$T/want"
    cmp -s "$T/rest" "$T/want" || fail "$f: after the first MiB: $(head -c 200 "$T/rest" | od -c | head -4)"
    [ "$(stat -c %s "$f")" = $((MiB + ${#want} + 1)) ] || fail "$f: size $(stat -c %s "$f")"
}

start_with_cap 1M
# 8 MB on stdout: cut at 1 MiB; the job completes, every write of it succeeded
j=$(gf submit --gpu 0 -- sh -c "cat $T/big && echo wrote-all >&2")
gf wait "$j" || fail "the 8 MB job did not complete: $(job_field "$j" reason)"
[ "$(job_field "$j" exit_status)" = 0 ] || fail "exit status $(job_field "$j" exit_status)"
check_cut "$(job_field "$j" stdout)"
[ "$(gf logs --stderr "$j")" = wrote-all ] || fail "stderr: $(gf logs --stderr "$j" | head -c 200)"
[ "$(stat_of "$j" spool.stdout_cut_bytes)" = $((7 * MiB)) ] || fail "show --json: cut $(stat_of "$j" spool.stdout_cut_bytes)"
[ "$(stat_of "$j" spool.stderr_cut_bytes)" = "" ] || fail "stderr counted as cut"
gf show "$j" | grep -q "^stdout: .* (cut: $((7 * MiB)) bytes past spool.max_bytes discarded)" \
    || fail "show does not say stdout was cut: $(gf show "$j")"
echo "  8 MB on stdout: 1 MiB kept, the marker, the job done"
# 8 MB on stderr, the same
e=$(gf submit --gpu 1 -- sh -c "cat $T/big >&2; echo out-ok")
gf wait "$e" || fail "the 8 MB stderr job: $(job_field "$e" reason)"
check_cut "$(job_field "$e" stderr)"
[ "$(gf logs "$e")" = out-ok ] || fail "stdout beside a cut stderr"
[ "$(stat_of "$e" spool.stderr_cut_bytes)" = $((7 * MiB)) ] || fail "stderr cut not counted"
gf show "$e" | grep -q "^stderr: .* (cut: $((7 * MiB)) bytes past spool.max_bytes discarded)" || fail "show stderr cut"
echo "  8 MB on stderr: the same"
# under the cap: byte for byte, NUL bytes too
head -c 300000 "$T/big" > "$T/small"
s=$(gf submit --gpu 0 -- sh -c "cat $T/small; cat $T/small >&2")
gf wait "$s" || fail "small job"
cmp "$(job_field "$s" stdout)" "$T/small" || fail "stdout under the cap changed"
cmp "$(job_field "$s" stderr)" "$T/small" || fail "stderr under the cap changed"
[ "$(stat_of "$s" spool.stdout_cut_bytes)$(stat_of "$s" spool.stderr_cut_bytes)" = "" ] || fail "under the cap counted as cut"
gf show "$s" | grep -q "cut:" && fail "show says a job under the cap was cut"
echo "  under the cap: byte for byte (NUL bytes included)"
# exactly the cap: nothing cut
head -c "$MiB" "$T/big" > "$T/exact"
x=$(gf submit --gpu 0 -- cat "$T/exact")
gf wait "$x" || fail "exact job"
cmp "$(job_field "$x" stdout)" "$T/exact" || fail "exactly the cap changed"
echo "  exactly the cap: kept whole"

start_with_cap 0
z=$(gf submit --gpu 0 -- cat "$T/big")
gf wait "$z" || fail "uncapped job"
cmp "$(job_field "$z" stdout)" "$T/big" || fail "max_bytes 0 did not keep everything"
[ "$(stat_of "$z" spool.stdout_cut_bytes)" = "" ] || fail "max_bytes 0 counted a cut"
echo "  max_bytes 0: all 8 MB kept"
echo "ok: spool.max_bytes caps stdout and stderr, marks and counts the cut, keeps binary output exactly"
