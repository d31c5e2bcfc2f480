#!/bin/bash
# lock_hostile — the card lock on a box with users who make mistakes or try
# things (docs/locking.md, "A hostile box"), with real users (useradd), real
# flock(1) and real gpuflock exec processes:
#   - a lock folder made by a user (as anyone may in a sticky /run/lock) is
#     refused by everyone else, root included (exit 69, naming the folder,
#     its owner and mode); before, that user could rename the lock file under
#     an exclusive holder and a second exclusive exec got the card at once;
#   - in a root-owned folder the user cannot move the file, a second
#     exclusive exec waits (75), unprivileged users lock the root-owned 0644
#     files read-only, and a missing lock file is an error naming the fix;
#   - relative, non-canonical and aliased lock paths are configuration
#     errors (78);
#   - shared holders do not starve an exclusive waiter: with a stream of
#     `exec -s` holders, the exclusive exec runs before the stream ends.
# Root only (it makes users); skipped otherwise.
source "$(dirname "$0")/lib/locktest.sh"

need_users gfmallory gfbob
chmod 0755 "$T"
as() { local u=$1; shift; (cd /tmp && runuser -u "$u" -- "$@"); }

# A sticky, world-writable folder like /run/lock, and a configuration whose
# lock folder inside it does not exist yet.
RUNLOCK="$T/runlock"
mkdir -m 1777 "$RUNLOCK"
chmod 1777 "$RUNLOCK"
HCFG="$T/hostile.yaml"
cat >"$HCFG" <<YAML
bench_lock: $RUNLOCK/gpuflock/bench.lock
devices:
  - {index: 0, kind: cpu, lock: $RUNLOCK/gpuflock/gpu0.lock}
  - {index: 1, kind: cpu, lock: $RUNLOCK/gpuflock/gpu1.lock}
YAML
chmod 0644 "$HCFG" "$CFG"

# 1. Mallory makes the lock folder first: everyone else refuses it.
as gfmallory mkdir "$RUNLOCK/gpuflock" || fail "mallory could not make the folder"
"$GF" exec --config "$HCFG" --gpu 0 --timeout 0 -- true 2>"$T/err1"
rc=$?
[ "$rc" -eq 69 ] || fail "root's exec in mallory's folder exited $rc, expected 69: $(cat "$T/err1")"
grep -q "folder $RUNLOCK/gpuflock belongs to gfmallory (mode 0755)" "$T/err1" ||
    fail "message does not name folder, owner and mode: $(cat "$T/err1")"
grep -q "chown root:root" "$T/err1" || fail "message does not say how to fix it: $(cat "$T/err1")"
as gfbob "$GF" exec --config "$HCFG" --gpu 0 --timeout 0 -- true 2>"$T/err2"
rc=$?
[ "$rc" -eq 69 ] || fail "bob's exec in mallory's folder exited $rc, expected 69"
# the attack itself: with her folder refused, no exclusive holder exists to
# be cheated; her own execs work in her own folder (she only fools herself)
as gfmallory "$GF" exec --config "$HCFG" --gpu 0 --timeout 0 -- true ||
    fail "mallory's own exec in her own folder failed"

# 2. The folder made by root (0755): mallory can no longer move the lock.
rm -rf "$RUNLOCK/gpuflock"
"$GF" exec --config "$HCFG" -s --gpu 0 --timeout 0 -- true || fail "root's exec in a fresh folder"
st=$(stat -c '%U %a' "$RUNLOCK/gpuflock" "$RUNLOCK/gpuflock/gpu0.lock" "$RUNLOCK/gpuflock/gpu0.lock.gate" 2>&1 | tr '\n' ' ')
[ "$st" = "root 755 root 644 root 644 " ] || fail "made folder, lock and gate as '$st'"
bg "$GF" exec --config "$HCFG" --gpu 0 -- sleep 600
holder=$BGPID
wait_holder "$RUNLOCK/gpuflock/gpu0.lock" "$holder"
as gfmallory mv "$RUNLOCK/gpuflock/gpu0.lock" "$RUNLOCK/gpuflock/stolen" 2>/dev/null &&
    fail "mallory moved the lock file"
expect_status 75 as gfbob "$GF" exec --config "$HCFG" --gpu 0 --timeout 0.2 -- true
kill_tree "$holder"
wait "$holder" 2>/dev/null
# unprivileged users lock the root-owned read-only files, both modes
as gfbob "$GF" exec --config "$HCFG" --gpu 0 --timeout 5 -- true || fail "bob exclusive on a 0644 root lock"
as gfbob "$GF" exec --config "$HCFG" -s --gpu 0 --timeout 5 -- true || fail "bob shared on a 0644 root lock"

# 3. A missing lock file in a root-owned folder: a clear error with the fix.
as gfbob "$GF" exec --config "$HCFG" --gpu 1 --timeout 0 -- true 2>"$T/err3"
rc=$?
[ "$rc" -eq 69 ] || fail "bob's exec with a missing lock file exited $rc, expected 69"
grep -q "gpu1.lock does not exist" "$T/err3" && grep -q "install -m 0644 /dev/null" "$T/err3" ||
    fail "missing lock file message: $(cat "$T/err3")"

# 4. Lock paths that are relative, not canonical or aliased: exit 78.
bad() {  # WANT-IN-MESSAGE YAML-DEVICES
    printf 'devices:\n%s\n' "$2" >"$T/bad.yaml"
    "$GF" exec --config "$T/bad.yaml" --gpu 0 --timeout 0 -- true 2>"$T/err4"
    local rc=$?
    [ "$rc" -eq 78 ] || fail "config '$2' exited $rc, expected 78"
    grep -q "bad.yaml:2: key 'devices\[.\].lock'.*$1" "$T/err4" || fail "config '$2': $(cat "$T/err4")"
}
bad "is relative" "  - {index: 0, kind: cpu, lock: rel.lock}"
mkdir -p "$T/l"
bad "not canonical" "  - {index: 0, kind: cpu, lock: $T/l/../l/a}"
ln -s "$T/l" "$T/alias"
printf 'devices:\n  - {index: 0, kind: cpu, lock: %s/l/a}\n  - {index: 1, kind: cpu, lock: %s/alias/a}\n' "$T" "$T" >"$T/bad.yaml"
"$GF" exec --config "$T/bad.yaml" --gpu 0,1 --timeout 0 -- true 2>"$T/err5"
[ $? -eq 78 ] && grep -q "resolves to" "$T/err5" || fail "symlinked alias: $(cat "$T/err5")"
touch "$T/l/a" && ln "$T/l/a" "$T/l/b"
printf 'devices:\n  - {index: 0, kind: cpu, lock: %s/l/a}\n  - {index: 1, kind: cpu, lock: %s/l/b}\n' "$T" "$T" >"$T/bad.yaml"
"$GF" exec --config "$T/bad.yaml" --gpu 0,1 --timeout 0 -- true 2>"$T/err6"
[ $? -eq 78 ] && grep -q "one device and inode" "$T/err6" || fail "hard-linked alias: $(cat "$T/err6")"
ln -s /nonexistent/gpu0.lock "$T/l/dangling"
printf 'devices:\n  - {index: 0, kind: cpu, lock: %s/l/dangling}\n' "$T" >"$T/bad.yaml"
"$GF" exec --config "$T/bad.yaml" --gpu 0 --timeout 0 -- true 2>"$T/err7"
[ $? -eq 78 ] && grep -q "is a symlink" "$T/err7" || fail "dangling symlink: $(cat "$T/err7")"

# 5. Fairness: a stream of shared execs (a new one every 0.2 s, each holding
# 0.4 s, for 10 s) and an exclusive exec started into it. The exclusive one
# must run before the stream ends (before: it waited until the stream stopped).
stamp() { date +%s.%N; }
(
    for i in $(seq 1 50); do
        "$GF" exec --config "$CFG" -s --gpu 0 -- sh -c "echo \$(date +%s.%N) >>'$T/stream'; sleep 0.4" &
        sleep 0.2
    done
    wait
) &
stream=$!
BG_PIDS+=("$stream")
poll_until "the stream to start" test -s "$T/stream"
sleep 1
asked=$(stamp)
"$GF" exec --config "$CFG" -x --gpu 0 --timeout 30 -- sh -c "date +%s.%N >'$T/excl'" 2>"$T/err8" ||
    fail "exclusive exec failed: $(cat "$T/err8")"
wait "$stream"
got=$(cat "$T/excl")
last=$(tail -1 "$T/stream")
echo "exclusive waited $(echo "$got - $asked" | bc) s; the stream's last start $(echo "$last - $asked" | bc) s after the ask"
[ "$(echo "$got < $last" | bc)" = 1 ] || fail "the exclusive exec ran only after the shared stream ended"
# while it waited, the shared ones that came after it said why they waited
echo ok
