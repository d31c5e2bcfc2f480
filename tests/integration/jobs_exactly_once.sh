#!/bin/bash
# 300 trivial jobs over two CPU cards: every one runs exactly once, all end
# done, both cards take part; then the same through one call per job.
. tests/integration/lib/jobs.bash
write_config
start_broker || exit 1

ids=$(gf submit --array 300 -- sh -c 'echo "$GPUFLOCK_ARRAY_INDEX $GPUFLOCK_DEVICE" >> '"$T"'/ran') || fail "submit --array"
[ "$(echo "$ids" | wc -l)" = 300 ] || fail "expected 300 ids"
gf wait $ids || fail "wait: some job did not succeed"
[ "$(wc -l < "$T/ran")" = 300 ] || fail "ran $(wc -l < "$T/ran") times, expected 300"
[ "$(cut -d' ' -f1 "$T/ran" | sort -n | uniq | wc -l)" = 300 ] || fail "some index ran twice or never"
cut -d' ' -f2 "$T/ran" | sort -u | tr '\n' ' ' | grep -qx '0 1 ' || fail "not both cards used: $(cut -d' ' -f2 "$T/ran" | sort | uniq -c)"

# one CLI call per job
for i in $(seq 20); do gf submit -- sh -c "echo one-$i >> $T/ran2" >> "$T/ids2" || fail "submit $i"; done
gf wait $(cat "$T/ids2") || fail "wait (single submits)"
[ "$(sort -u "$T/ran2" | wc -l)" = 20 ] && [ "$(wc -l < "$T/ran2")" = 20 ] || fail "single submits did not run once each"

# --file: one job per line, with GPUFLOCK_ARRAY_INDEX
printf 'echo a-$GPUFLOCK_ARRAY_INDEX >> %s/ran3\n# a comment\n\necho b-$GPUFLOCK_ARRAY_INDEX >> %s/ran3\n' "$T" "$T" > "$T/list"
ids3=$(gf submit --file "$T/list") || fail "submit --file"
gf wait $ids3 || fail "wait --file jobs"
[ "$(sort "$T/ran3" | tr '\n' ' ')" = "a-0 b-1 " ] || fail "--file jobs: $(cat "$T/ran3")"

# statuses and failures come back
id=$(gf submit -- sh -c 'exit 7')
gf wait "$id"; rc=$?
[ "$rc" = 7 ] || fail "wait on a job that exits 7 gave $rc"
[ "$(job_field "$id" state)" = failed ] || fail "exit 7 not failed"
id=$(gf submit -- /no/such/program)
gf wait "$id"; [ $? = 127 ] || fail "missing program not 127"
gf logs --stderr "$id" | grep -q 'cannot run /no/such/program' || fail "no reason in stderr"
gf queue --all | grep -q ' done ' || fail "queue --all shows no done job"
gf queue --all --json | /usr/bin/python3 -c 'import json,sys; a=json.load(sys.stdin); assert len(a) == 324, len(a)' || fail "queue --json count"
echo "ok: 300 + 20 + 2 jobs exactly once"
