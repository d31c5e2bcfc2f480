#!/bin/bash
# A full disk (issue 21): gpuflockd keeps serving when its job store cannot
# commit. state_dir and spool_dir on two small tmpfs of their own: a job
# that writes 8 MB fills the spool's and not the store's; then the store's
# disk is filled by hand: submits (and cancels) are refused with exit
# status 74 and a message naming the folder and the full disk, reads
# (queue, show, workers) still answer, a job that ends meanwhile keeps its
# result in the broker's memory, the broker never exits, and once space is
# back it records everything by itself: nothing acknowledged is lost and no
# id is handed out twice. Needs root (mount -t tmpfs).
. tests/integration/lib/jobs.bash
if [ "$(id -u)" != 0 ]; then echo "skip: needs root to mount small tmpfs file systems"; exit 77; fi
mkdir -p "$T/state" "$T/spool"
mount -t tmpfs -o size=4m,mode=0711 gf-state "$T/state" 2>/dev/null || { echo "skip: cannot mount a tmpfs here"; exit 77; }
if ! mount -t tmpfs -o size=2m,mode=0711 gf-spool "$T/spool"; then umount "$T/state"; echo "skip: cannot mount a tmpfs here"; exit 77; fi
unmount() { umount "$T/state" 2>/dev/null; umount "$T/spool" 2>/dev/null; }
trap 'stop_broker; kill_workers; unmount; cleanup' EXIT
write_config
echo "spool_dir: $T/spool" >> "$CFG"
start_broker || exit 1
alive() { kill -0 "$BROKER_PID" 2>/dev/null || fail "the broker exited"; }
used() { df --output=used -B1 "$1" | tail -1; }

# job output has a disk of its own: 8 MB to stdout fill the spool, not the store
big=$(gf submit -- sh -c 'head -c 8388608 /dev/zero') || fail "submit the big writer"
gf wait "$big" >/dev/null 2>&1
alive
[ "$(job_field "$big" stdout)" = "$T/spool/$big.out" ] || fail "the spool is not spool_dir: $(job_field "$big" stdout)"
[ "$(df --output=avail -B1 "$T/spool" | tail -1)" -lt 65536 ] || fail "the big writer did not fill the spool"
alive
s=$(gf submit -- true) || fail "submit after the spool filled up"
gf wait "$s" || fail "a job after the spool filled up"
rm -f "$T/spool/$big.out"

# a few acknowledged jobs; A runs on card 0 through the full disk; C holds
# card 1 and B waits for it
acked=()
for _ in 1 2 3; do acked+=("$(gf submit --gpu 1 -- sleep 0.2)") || fail "submit before the disk filled"; done
gf wait "${acked[@]}" || fail "the first jobs"
a=$(gf submit --gpu 0 -- sh -c "touch $T/a.up; while [ ! -e $T/a.go ]; do sleep 0.05; done") || fail "submit A"
c=$(gf submit --gpu 1 -- sh -c "touch $T/c.up; while [ ! -e $T/c.go ]; do sleep 0.05; done") || fail "submit C"
b=$(gf submit --gpu 1 -s -- touch "$T/b.ran") || fail "submit B"   # shared: not handed over ahead
for _ in $(seq 100); do [ -e "$T/a.up" ] && [ -e "$T/c.up" ] && break; sleep 0.05; done
[ -e "$T/a.up" ] && [ -e "$T/c.up" ] || fail "A or C did not start"
[ "$(job_field "$b" state)" = pending ] || fail "B is $(job_field "$b" state), want pending"

# fill the store's disk; C ends: the turn that takes its end starts B, and
# its commit fails: C's end and B's start stay in memory, B's assignment waits
dd if=/dev/zero of="$T/state/filler" bs=64k 2>/dev/null
[ "$(df --output=avail -B1 "$T/state" | tail -1)" -lt 65536 ] || fail "state_dir not full"
touch "$T/c.go"
for _ in $(seq 100); do grep -q "cannot commit" "$T/broker.log" && break; sleep 0.05; done
grep -q "cannot commit" "$T/broker.log" || fail "C's end did not meet the full disk"
[ "$(job_field "$c" state)" = done ] || fail "C is $(job_field "$c" state) in memory, want done"
sleep 0.5
[ -e "$T/b.ran" ] && fail "B ran before its start was recorded"
alive
# submits are refused until there is space
refused=
for i in $(seq 300); do
    if id=$(gf submit --gpu 1 -- true 2>"$T/submit.err"); then
        acked+=("$id")
    else
        rc=$?
        [ "$rc" = 74 ] || fail "a refused submit exits $rc, want 74: $(cat "$T/submit.err")"
        refused=1
        break
    fi
done
[ -n "$refused" ] || fail "300 submits on a full disk and none refused"
grep -q "state_dir $T/state" "$T/submit.err" && grep -q "full" "$T/submit.err" ||
    fail "the refusal does not name the folder and the full disk: $(cat "$T/submit.err")"
echo "refused after $i submits on the full disk: $(cat "$T/submit.err")"
alive
# while the store cannot commit: A ends, its result waits in memory
touch "$T/a.go"
for _ in $(seq 100); do [ "$(job_field "$a" state)" = done ] && break; sleep 0.05; done
[ "$(job_field "$a" state)" = done ] || fail "A's result did not reach the broker: $(job_field "$a" state)"
sleep 1   # more than two heartbeats: the worker has let A's result go
alive
# reads answer; changes are refused
gf queue >/dev/null || fail "queue on a full disk"
gf queue --all >/dev/null || fail "queue --all on a full disk"
gf workers | grep -qE ' (idle|busy) ' || fail "workers on a full disk"
gf show "${acked[0]}" >/dev/null || fail "show on a full disk"
gf submit -- true 2>"$T/submit.err"; [ $? = 74 ] || fail "a second submit on the full disk was not refused"
gf cancel "${acked[-1]}" 2>"$T/cancel.err"; rc=$?
[ "$rc" = 74 ] || fail "cancel on a full disk exits $rc, want 74: $(cat "$T/cancel.err")"
grep -q "commits again" "$T/broker.log" && fail "caught up while the disk is still full?"
alive

# space again: the broker records what it held, by itself
rm -f "$T/state/filler"
ok=
for _ in $(seq 100); do
    if id=$(gf submit --gpu 1 -- true 2>/dev/null); then ok=1; acked+=("$id"); break; fi
    sleep 0.1
done
[ -n "$ok" ] || fail "submits still refused after space came back"
grep -q "commits again" "$T/broker.log" || fail "no word of the store catching up"
gf wait "$a" || fail "A after the disk came back: $(job_field "$a" state) $(job_field "$a" reason)"
gf wait "$c" "$b" || fail "C and B after the disk came back: $(job_field "$b" state) $(job_field "$b" reason)"
[ -e "$T/b.ran" ] || fail "B did not run once its start was recorded"
gf wait "${acked[@]}" || fail "the acknowledged jobs after the disk came back"
alive
# a restart reads everything back from the store: A done, every
# acknowledged job there once, and ids never handed out twice
stop_broker
restart_broker || fail "restart"
[ "$(job_field "$a" state)" = done ] || fail "A is $(job_field "$a" state) in the store, want done"
gf queue --all --json > "$T/all.json" || fail "queue --all"
/usr/bin/python3 - "$T/all.json" "$a" "$b" "$c" "${acked[@]}" <<'PY' || fail "jobs lost or doubled"
import json, sys
jobs = json.load(open(sys.argv[1]))
ids = [j["id"] for j in jobs]
assert len(ids) == len(set(ids)), "an id twice"
want = [int(x) for x in sys.argv[2:]]
assert len(want) == len(set(want)), "an acknowledged id given twice"
missing = [i for i in want if i not in ids]
assert not missing, "acknowledged jobs missing: %s" % missing
states = {j["id"]: j["state"] for j in jobs}
bad = [i for i in want if states[i] != "done"]
assert not bad, "not done: %s" % [(i, states[i]) for i in bad]
print("%d acknowledged jobs, all in the store and done" % len(want))
PY
echo "ok: the broker served through a full disk and recorded everything once space came back"
