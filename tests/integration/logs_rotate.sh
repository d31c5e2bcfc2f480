#!/bin/bash
# The log file (log_file): gpuflockd and its workers append there, besides
# stderr, one line per event with the job and the card.
#   1. Rotation under load: while 240 jobs run on two cards, the file is
#      moved away and the broker sent SIGHUP three times (what logrotate's
#      postrotate does). Every line of every file is whole (the file's line
#      form, nothing cut, nothing glued), every job's start and end are in
#      exactly one of the files (none lost, none written twice), and once
#      the broker and both workers said they reopened, the lines of the jobs
#      that follow are in the new file. A move nobody signals is noticed
#      within a heartbeat. The file is 0640.
#   2. Refused: a symlink planted at the name (its target is left as it
#      was), a folder writable by others (sticky or not) or by its group, a
#      hard link at the name: the broker says why and exits 70 before it
#      serves.
#   3. A full disk does not stop the broker: on a tmpfs of its own, filled,
#      jobs run and end, lines go on to stderr, the file says how many it
#      missed once there is room again; a file that cannot even be made at
#      start is made by the broker later. Needs root (mount -t tmpfs).
. tests/integration/lib/jobs.bash
LOG="$T/log/gpuflockd.log"
# the file's line form: 2025-01-31T12:00:01.250+0100 gpuflockd[41] info: ...
LINE_RE='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{4} (gpuflockd|worker[0-9]+)\[[0-9]+\] (debug|info|warn|error): [^[:cntrl:]]*$'

with_log() {   # write the config with log_file PATH
    write_config
    echo "log_file: $1" >>"$CFG"
}
wait_for() {   # SECONDS CMD...: until CMD succeeds
    local n=$(($1 * 20)); shift
    for _ in $(seq "$n"); do "$@" && return 0; sleep 0.05; done
    return 1
}
reopened_all() {   # FILE: the broker and both workers reopened into it
    grep -q "gpuflockd\[[0-9]*\] info: log file $LOG reopened" "$1" &&
        grep -q "worker0\[[0-9]*\] info: log file $LOG reopened" "$1" &&
        grep -q "worker1\[[0-9]*\] info: log file $LOG reopened" "$1"
}

# ---- 1. rotation under load -------------------------------------------
mkdir -m 0750 "$T/log"
with_log "$LOG"
start_broker || exit 1
[ "$(stat -c %a "$LOG")" = 640 ] || fail "log file mode $(stat -c %a "$LOG"), want 640"
grep -q "gpuflockd\[[0-9]*\] info: gpuflockd serving" "$LOG" || fail "the broker's start is not in the file"
ids=$(gf submit --array 240 -s -- sh -c 'sleep 0.0$((RANDOM % 5))') || fail "submit the batch"
first=$(echo "$ids" | head -1)
for r in 1 2 3; do
    sleep 0.3
    mv "$LOG" "$LOG.$r"
    kill -HUP "$BROKER_PID"
done
gf wait $ids >/dev/null 2>&1 || fail "the batch did not end done"
wait_for 5 reopened_all "$LOG" || fail "not every process reopened the file: $(grep reopened "$LOG")"
more=$(gf submit --array 10 -- true) || fail "submit after the rotations"
gf wait $more >/dev/null || fail "the jobs after the rotations"
kill -0 "$BROKER_PID" || fail "the broker died"
files=("$LOG.1" "$LOG.2" "$LOG.3" "$LOG")
for f in "${files[@]}"; do
    [ -s "$f" ] || fail "$f is empty"
    bad=$(grep -cvE "$LINE_RE" "$f")
    [ "$bad" = 0 ] || fail "$f: $bad lines not whole: $(grep -vE "$LINE_RE" "$f" | head -3)"
done
all=$(cat "${files[@]}")
for id in $ids $more; do
    s=$(grep -c "gpuflockd\[[0-9]*\] info: job $id started on card [01] " <<<"$all")
    e=$(grep -c "gpuflockd\[[0-9]*\] info: job $id done on card [01] after " <<<"$all")
    [ "$s" = 1 ] && [ "$e" = 1 ] || fail "job $id: $s start lines and $e end lines in the files, want 1 and 1"
done
for id in $more; do
    grep -q "info: job $id done on card" "$LOG" || fail "job $id's end (after the last reopen) is not in the new file"
done
grep -q "info: job $first started on card" "$LOG" && fail "job $first's start went to the new file"
# stderr too (the journal under systemd)
grep -q "gpuflockd\[[0-9]*\] info: job $first started on card" "$T/broker.log" || fail "job $first not on stderr"
# a move nobody signals: every process sees it within a heartbeat or two
mv "$LOG" "$LOG.4"
wait_for 5 reopened_all "$LOG" || fail "an unsignalled move was not noticed: $(ls -l "$T/log")"
n=$(gf submit -- true) && gf wait "$n" >/dev/null || fail "a job after the unsignalled move"
wait_for 2 grep -q "info: job $n done on card" "$LOG" || fail "job $n's end is not in the newest file"
# deploy/gpuflock.logrotate through logrotate itself (its paths made this test's)
if command -v logrotate >/dev/null; then
    sed -e "s|/var/log/gpuflock/gpuflockd.log|$LOG|" -e "s|/run/gpuflock/|$T/run/|" \
        deploy/gpuflock.logrotate >"$T/logrotate.conf"
    rm -f "$LOG".[0-9]*
    for round in 1 2; do
        logrotate -f -s "$T/logrotate.state" "$T/logrotate.conf" || fail "logrotate, round $round"
        wait_for 5 reopened_all "$LOG" || fail "logrotate round $round: not every process reopened"
        j=$(gf submit -- true) && gf wait "$j" >/dev/null || fail "a job after logrotate round $round"
        wait_for 2 grep -q "info: job $j done on card" "$LOG" || fail "job $j not in the file logrotate left"
    done
    [ -s "$LOG.1" ] && [ -s "$LOG.2.gz" ] || fail "logrotate left: $(ls "$T/log")"   # delaycompress
    [ "$(stat -c %a "$LOG")" = 640 ] || fail "the file after logrotate is $(stat -c %a "$LOG")"
    zcat "$LOG.2.gz" | grep -qvE "$LINE_RE" && fail "a broken line in the compressed file"
else
    echo "skip: part 1 (deploy/gpuflock.logrotate through logrotate): logrotate is not installed"
fi
stop_broker
# the postrotate script signals no one when no broker holds the pid file:
# a pid left there may be another process's by now (here: a sleep of ours)
if command -v logrotate >/dev/null; then
    sleep 30 &
    bystander=$!
    echo "$bystander" >"$T/run/gpuflockd.pid"
    echo "a line" >>"$LOG"
    logrotate -f -s "$T/logrotate.state" "$T/logrotate.conf" || fail "logrotate with no broker"
    sleep 0.2
    kill -0 "$bystander" 2>/dev/null || fail "the postrotate script signalled a pid no broker holds"
    kill "$bystander"
fi
echo "ok: rotation: 250 jobs, 4 moves and SIGHUP, 2 logrotate runs: every line whole, each start and end once, lines after in the new file"

# ---- 2. what is refused ------------------------------------------------
refused() {   # WHAT WORDS: the broker stops with 70 and says WORDS
    "$GFD" --config "$CFG" --foreground 2>"$T/refused.log" &
    local pid=$!
    local t=0
    while kill -0 $pid 2>/dev/null && [ $t -lt 100 ]; do sleep 0.05; t=$((t + 1)); done
    if kill -0 $pid 2>/dev/null; then kill -TERM $pid; wait $pid; fail "$1: the broker started"; fi
    wait $pid; local rc=$?
    [ $rc = 70 ] || fail "$1: exit status $rc, want 70: $(cat "$T/refused.log")"
    grep -q "$2" "$T/refused.log" || fail "$1: no '$2' in: $(cat "$T/refused.log")"
    [ -e "$T/run/client.sock" ] && fail "$1: the broker bound its socket before it refused"
    return 0
}
echo "a file of root's" >"$T/precious"
rm -f "$LOG"
ln -s "$T/precious" "$LOG"
refused "a symlink at the name" "is a symbolic link: refused"
[ "$(cat "$T/precious")" = "a file of root's" ] || fail "the symlink's target was written"
rm -f "$LOG"
ln "$T/precious" "$LOG"
refused "a hard link at the name" "hard links"
rm -f "$LOG"
[ "$(cat "$T/precious")" = "a file of root's" ] || fail "the hard link's file was written"
mkdir "$T/pub"
for mode in 0777 1777 0770; do
    chmod "$mode" "$T/pub"
    with_log "$T/pub/gpuflockd.log"
    refused "a folder of mode $mode" "is writable by"
    [ -e "$T/pub/gpuflockd.log" ] && fail "mode $mode: the file was made"
done
echo "ok: refused: a symlink, a hard link, folders writable by others or the group (exit 70, nothing written)"

# ---- 3. a full disk ----------------------------------------------------
if [ "$(id -u)" != 0 ]; then echo "skip: part 3 (a full disk): needs root to mount a small tmpfs"; exit 0; fi
mkdir -p "$T/small"
if ! mount -t tmpfs -o size=256k,nr_inodes=3,mode=0750 gf-log "$T/small" 2>/dev/null; then
    echo "skip: part 3 (a full disk): cannot mount a tmpfs here"; exit 0
fi
trap 'stop_broker; kill_workers; umount "$T/small" 2>/dev/null; cleanup' EXIT
SMALL="$T/small/gpuflockd.log"
LOG=$SMALL
# full, no inode left: the file cannot even be made; the broker serves on
dd if=/dev/zero of="$T/small/filler" bs=16k 2>/dev/null
touch "$T/small/inode" 2>/dev/null
with_log "$SMALL"
: >"$T/broker.log"
start_broker || fail "the broker did not start on a full log disk"
[ -e "$SMALL" ] && fail "a file was made on a full disk?"
grep -q "log_file $SMALL: No space left on device: lines go to stderr only" "$T/broker.log" ||
    fail "no word of the full disk: $(head -5 "$T/broker.log")"
j=$(gf submit -- true) && gf wait "$j" >/dev/null || fail "a job with the log disk full"
rm -f "$T/small/inode" "$T/small/filler"
wait_for 5 test -s "$SMALL" || fail "the broker did not make the log file once there was room"
wait_for 5 grep -q "worker0\[[0-9]*\] info: log file $SMALL reopened" "$SMALL" || fail "worker 0 did not open it"
wait_for 5 grep -q "worker1\[[0-9]*\] info: log file $SMALL reopened" "$SMALL" || fail "worker 1 did not open it"
# the file fills while jobs run: they go on, the lines go to stderr, the
# file says what it missed once it can be written again
dd if=/dev/zero of="$T/small/filler" bs=4k 2>/dev/null
# (the file's last page may still take a few lines: batches until it is full)
for _ in $(seq 10); do
    full=$(gf submit --array 20 -- true) || fail "submit with the log disk full"
    gf wait $full >/dev/null || fail "jobs with the log disk full"
    kill -0 "$BROKER_PID" || fail "the broker died on a full log disk"
    grep -q "log file $SMALL: cannot write it: No space left on device" "$T/broker.log" && break
done
grep -q "log file $SMALL: cannot write it: No space left on device" "$T/broker.log" ||
    fail "no word of the failed writes on stderr"
last=$(echo "$full" | tail -1)
grep -q "info: job $last done on card" "$T/broker.log" || fail "job $last's end not on stderr"
rm -f "$T/small/filler"
after=$(gf submit -- true) && gf wait "$after" >/dev/null || fail "a job after the room came back"
wait_for 3 grep -q "info: job $after done on card" "$SMALL" || fail "no lines in the file after the room came back"
grep -qE "log file $SMALL: [0-9]+ lines? could not be written to it \(No space left on device\)" "$SMALL" ||
    fail "the file does not say what it missed"
bad=$(grep -cvE "$LINE_RE" "$SMALL")
# a line may be cut where the disk filled; the next starts a line of its own
[ "$bad" -le 3 ] || fail "$bad broken lines in $SMALL: $(grep -vE "$LINE_RE" "$SMALL" | head -3)"
echo "ok: a full log disk: the broker starts, serves and catches up (the file made later, its gap said)"
