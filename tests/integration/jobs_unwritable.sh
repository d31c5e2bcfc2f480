#!/bin/bash
# A broker that cannot write its job store or its spool (issue 21) says so
# and exits at start, before it starts any worker; none of its workers is
# left running. Three ways: an unprivileged user's broker on a root-owned
# 0555 state_dir that holds a store it can read (SQLite would open it
# read-only, and the old broker served until the first submit, then
# stopped and left its two workers running), and as root a store and a
# spool on read-only mounts. Needs root (useradd, mount).
. tests/integration/lib/jobs.bash
need_users gfjobuser1
mounts=()
trap 'stop_broker; kill_workers; for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done; cleanup' EXIT

# its workers: gpuflock-worker processes started with this config
workers_of() { pgrep -f "gpuflock-worker --device [0-9]+ --config $1\$" | tr '\n' ' '; }

# Run a broker (as user $1, "" for root) on config $2; it must exit within
# 10 s with a status that is not 0 and a message matching $3, leaving no
# worker. A broker that instead serves is sent a submit (which the old
# broker could not commit) and then checked for workers left behind.
expect_refusal() {
    local user=$1 cfg=$2 want=$3 log="$T/refused.log" pid rc
    : > "$log"
    if [ -n "$user" ]; then
        (cd /tmp && exec runuser -u "$user" -- "$GFD" --config "$cfg" --foreground) 2>"$log" &
    else
        "$GFD" --config "$cfg" --foreground 2>"$log" &
    fi
    pid=$!
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        if [ -n "$user" ]; then (cd /tmp && runuser -u "$user" -- "$GF" submit --config "$cfg" -- true); else "$GF" submit --config "$cfg" -- true; fi
        sleep 2
        left=$(workers_of "$cfg")
        kill -TERM "$pid" 2>/dev/null; wait "$pid"
        [ -n "$left" ] && for w in $left; do kill -KILL "$w"; done
        fail "a broker on an unwritable store started and served (workers it left after a submit: ${left:-none}); its log: $(cat "$log")"
    fi
    wait "$pid"; rc=$?
    [ "$rc" != 0 ] || fail "the broker exited 0"
    grep -Eq "$want" "$log" || fail "the broker's message does not match '$want': $(cat "$log")"
    grep -q "started worker" "$log" && fail "the broker started workers before it failed: $(cat "$log")"
    sleep 0.3
    [ -z "$(workers_of "$cfg")" ] || fail "workers left running: $(workers_of "$cfg")"
    echo "refused (exit $rc): $(grep -E "$want" "$log" | head -1)"
}

# a store made by root, then left by a broker killed with SIGKILL (its -wal
# and -shm stay, which lets SQLite open it read-only)
write_config
start_broker || exit 1
j=$(gf submit -- true) && gf wait "$j" || fail "the first job"
kill -KILL "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null; BROKER_PID=
kill_workers
sleep 0.3

# 1. an unprivileged user's broker, the store root's, readable, in a 0555 folder
CFG1="$T/user.yaml"
mkdir -p "$T/userrun" && chown gfjobuser1 "$T/userrun"
sed "s|^run_dir: .*|run_dir: $T/userrun|" "$CFG" > "$CFG1"
chmod 644 "$CFG1" "$T"/state/jobs.db*
chmod 555 "$T/state"
expect_refusal gfjobuser1 "$CFG1" "state_dir $T/state is not writable by uid $(id -u gfjobuser1): Permission denied"
chmod 711 "$T/state"

# 2. as root, the store on a read-only file system
mkdir -p "$T/rostate"
mount -t tmpfs -o size=8m gf-rostate "$T/rostate" 2>/dev/null || { echo "skip: cannot mount a tmpfs here"; exit 77; }
mounts+=("$T/rostate")
cp -a "$T"/state/. "$T/rostate/"
CFG2="$T/ro.yaml"
sed "s|^state_dir: .*|state_dir: $T/rostate|" "$CFG" > "$CFG2"
mount -o remount,ro "$T/rostate" || fail "remount read-only"
expect_refusal "" "$CFG2" "state_dir $T/rostate is not writable by uid 0: Read-only file system"

# 3. as root, the spool on a read-only file system (the store writable)
mkdir -p "$T/rospool"
mount -t tmpfs -o size=1m,mode=0711 gf-rospool "$T/rospool" || fail "mount the spool"
mounts+=("$T/rospool")
mount -o remount,ro "$T/rospool" || fail "remount the spool read-only"
CFG3="$T/rospool.yaml"
cp "$CFG" "$CFG3"
echo "spool_dir: $T/rospool" >> "$CFG3"
expect_refusal "" "$CFG3" "spool_dir $T/rospool is not writable by uid 0"

# and the same store, writable again, serves
start_broker || fail "the broker on its writable store"
[ "$(job_field "$j" state)" = done ] || fail "the first job after all that"
echo "ok: a broker that cannot write its store or spool exits at start and starts no worker"
