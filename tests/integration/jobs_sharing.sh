#!/bin/bash
# Shared jobs share a card up to its slots; an exclusive job runs alone; an
# exclusive request is served while a stream of shared jobs keeps coming.
# Each job logs "start|end ID CARD NANOS" and the check is on the order of
# those events, not on how long anything took.
. tests/integration/lib/jobs.bash
SLOTS=2 write_config
start_broker || exit 1
EV="$T/events"
job() {  # name seconds
    echo "echo start $1-\$GPUFLOCK_JOB_ID \$GPUFLOCK_DEVICE \$(date +%s%N) >> $EV; sleep $2; echo end $1-\$GPUFLOCK_JOB_ID \$GPUFLOCK_DEVICE \$(date +%s%N) >> $EV"
}
# max overlap per card, and whether exclusive jobs overlapped anything
check() {
    /usr/bin/python3 - "$EV" "$@" <<'PY'
import sys
ev = [l.split() for l in open(sys.argv[1])]
ev.sort(key=lambda e: (int(e[3]), e[0] == 'start'))  # ends before starts at a tie
live = {}
maxc = {}
bad = []
for kind, name, card, t in ev:
    s = live.setdefault(card, set())
    if kind == 'start':
        if any(n.startswith('X') for n in s) or (name.startswith('X') and s):
            bad.append((name, sorted(s)))
        s.add(name)
        maxc[card] = max(maxc.get(card, 0), len(s))
    else:
        s.discard(name)
print(maxc, bad)
want = int(sys.argv[2])
assert not bad, "exclusive overlapped: %s" % bad
assert maxc.get('0', 0) == want, "card 0 max overlap %s, want %d" % (maxc, want)
PY
}

# six shared jobs on card 0, two slots: two at a time, never three
ids=$(gf submit --array 6 -s --gpu 0 -- sh -c "$(job S 0.4)") || fail submit
gf wait $ids || fail "shared jobs"
check 2 || fail "shared slots"

# an exclusive job amid shared ones: alone on the card
: > "$EV"
a=$(gf submit --array 2 -s --gpu 0 -- sh -c "$(job S 0.4)")
x=$(gf submit -x --gpu 0 -- sh -c "$(job X1 0.3)")
b=$(gf submit --array 3 -s --gpu 0 -- sh -c "$(job S 0.2)")
gf wait $a $x $b || fail "mixed jobs"
check 2 || fail "exclusive with shared"

# a stream of shared jobs keeps arriving; an exclusive one still gets in,
# before the stream has ended
: > "$EV"
for i in $(seq 4); do gf submit -s --gpu 0 -- sh -c "$(job S$i 0.5)" >> "$T/stream"; done
x=$(gf submit -x --gpu 0 -- sh -c "$(job X2 0.1)")
for i in $(seq 5 14); do gf submit -s --gpu 0 -- sh -c "$(job S$i 0.3)" >> "$T/stream"; sleep 0.1; done
gf wait $(cat "$T/stream") $x || fail "stream"
check 2 || fail "exclusive amid a stream"
xs=$(awk '$1=="start" && $2 ~ /^X2-/ {print NR}' "$EV")
later=$(awk -v x="$xs" '$1=="start" && NR > x' "$EV" | wc -l)
[ "$later" -ge 1 ] || fail "the exclusive job only ran after the whole stream"
# none of the shared jobs submitted after the exclusive one started before it
for i in $(seq 5 14); do
    s=$(awk -v n="S$i-" '$1=="start" && index($2, n) == 1 {print NR}' "$EV")
    [ "$s" -gt "$xs" ] || fail "S$i (submitted after X2) started before it"
done
echo "ok: shared slots, exclusive alone, exclusive not starved"
