#!/bin/bash
# completion — the bash completion (deploy/bash-completion/gpuflock), run by
# bash itself: the script is sourced, COMP_WORDS and COMP_CWORD set as
# readline sets them, _gpuflock called and COMPREPLY compared. Once without
# the bash-completion package's helpers and once with them (where
# /usr/share/bash-completion/bash_completion is installed).
#
# - The commands are those `gpuflock help` lists (and help).
# - Each command's options are exactly those its --help defines, and --help
#   (tests/integration/lib/helpopts.sh reads them); the same for the options
#   before a command, gpuflockd and gpuflock-worker.
# - Cards come from the configuration without a broker (`locks --json`: a
#   private config of cards 0 and 3) and from `workers --json` with one; job
#   ids from `queue --json` (two held jobs), nothing without a broker, and
#   nothing within about a second from a gpuflock that does not answer.
# - Values: --math, --area (comma lists), --log-level, files and folders,
#   --config=FILE, the command after `--`.
# COMPLETION=FILE and GF_BIN=DIR test another copy (install.sh: the installed
# script and programs).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
. tests/integration/lib/helpopts.sh
BIN=$(cd "${GF_BIN:-$BUILD/bin}" 2>/dev/null && pwd) || { echo "FAIL: no ${GF_BIN:-$BUILD/bin}"; exit 1; }
SCRIPT=$(realpath "${COMPLETION:-deploy/bash-completion/gpuflock}")
GF=$BIN/gpuflock
FULL=/usr/share/bash-completion/bash_completion

T=$(mktemp -d --suffix=.gf-comp)
chmod 755 "$T"
CFG=$T/cfg.yaml
BROKER_PID=
cleanup() {
    if [ -n "$BROKER_PID" ]; then
        kill -TERM "$BROKER_PID" 2>/dev/null
        wait "$BROKER_PID" 2>/dev/null
    fi
    rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/lock" "$T/files/sub"
cat >"$CFG" <<YAML
run_dir: $T/run
state_dir: $T/state
bench_lock: $T/lock/bench.lock
devices:
  - {index: 0, kind: cpu, lock: $T/lock/gpu0.lock}
  - {index: 3, kind: cpu, lock: $T/lock/gpu3.lock}
broker:
  heartbeat_interval_ms: 200
  shutdown_deadline_s: 2
  kill_grace_s: 1
YAML
touch "$T/files/ref.rttm" "$T/files/hyp.rttm" "$T/files/seg.npy" "$T/files/notes.txt"

failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# comp MODE WORD...: what bash completes for the last WORD of the line
# WORD..., one a line, sorted. MODE: plain (this script alone) or full (with
# bash-completion's helpers).
comp() {
    local mode=$1
    shift
    bash --norc --noprofile -c '
        mode=$1 script=$2 full=$3
        shift 3
        [ "$mode" = full ] && . "$full"
        . "$script"
        COMP_WORDS=("$@")
        COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"
        COMP_LINE=${COMP_LINE// = /=}
        COMP_POINT=${#COMP_LINE}
        _gpuflock 2>/dev/null
        printf "%s\n" "${COMPREPLY[@]}"' comp "$mode" "$SCRIPT" "$FULL" "$@" |
        sed '/^$/d' | LC_ALL=C sort -u
}

# same MODE WHAT WANT GOT: fail unless the two lists (one word a line) agree.
same() {
    if [ "$3" != "$4" ]; then
        fail "$1: $2: expected [$(echo $3)], completed [$(echo $4)]"
        return 1
    fi
}
words() { printf '%s\n' "$@" | sed '/^$/d' | LC_ALL=C sort -u; }

commands=$("$GF" help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
[ -n "$commands" ] || { echo "FAIL: gpuflock help lists no commands"; exit 1; }

modes=plain
if [ -f "$FULL" ]; then
    modes="plain full"
else
    echo "skip: with bash-completion's helpers: $FULL is not installed (Debian package bash-completion)"
fi

# A gpuflock that never answers: completion gives up on it.
mkdir -p "$T/slow"
printf '#!/bin/sh\nexec sleep 30\n' >"$T/slow/gpuflock"
chmod 755 "$T/slow/gpuflock"

for mode in $modes; do
    same $mode "the commands" "$(words $commands help)" "$(comp $mode "$GF" "")"
    same $mode "commands starting with re" "$(words release requeue resume)" "$(comp $mode "$GF" re)"
    same $mode "options before the command" "$("$GF" --help | help_options)" "$(comp $mode "$GF" -)"
    n=0
    for c in $commands; do
        want=$( { "$GF" "$c" --help | help_options; echo --help; } | LC_ALL=C sort -u)
        same $mode "$c's options" "$want" "$(comp $mode "$GF" "$c" -)" && n=$((n + 1))
    done
    same $mode "help's options" "--help" "$(comp $mode "$GF" help -)"
    same $mode "help's word" "$(words $commands help)" "$(comp $mode "$GF" help "")"
    for p in gpuflockd gpuflock-worker; do
        want=$( { "$BIN/$p" --help | help_options; echo --help; } | LC_ALL=C sort -u)
        same $mode "$p's options" "$want" "$(comp $mode "$BIN/$p" -)"
    done
    echo "$mode: the commands and the options of $n commands, gpuflockd and gpuflock-worker agree with their --help"

    # Cards from the configuration (no broker yet), also for a line whose
    # --config comes before the command and for gpuflock-worker.
    same $mode "exec --gpu (the configuration)" "$(words 0 3)" \
        "$(comp $mode "$GF" exec --config "$CFG" --gpu "")"
    same $mode "exec --gpu 0, (a list)" "$(words 0,0 0,3)" \
        "$(comp $mode "$GF" exec --config "$CFG" --gpu 0,)"
    same $mode "drain's card" "$(words 0 3)" "$(comp $mode "$GF" --config "$CFG" drain "")"
    same $mode "gpuflock-worker --device" "$(words 0 3)" \
        "$(comp $mode "$BIN/gpuflock-worker" --config "$CFG" --device "")"
    # No broker: no job ids, at once.
    start=$SECONDS
    same $mode "cancel without a broker" "" "$(comp $mode "$GF" cancel --config "$CFG" "")"
    # A gpuflock that does not answer: nothing, after about a second.
    same $mode "wait, gpuflock not answering" "" "$(comp $mode "$T/slow/gpuflock" wait "")"
    [ $((SECONDS - start)) -le 6 ] || fail "$mode: completing job ids took $((SECONDS - start)) s"

    same $mode "--math" "$(words fp32 tf32)" "$(comp $mode "$GF" qualify --math "")"
    same $mode "--area lstm,s" "$(words lstm,segconv lstm,sincnet)" "$(comp $mode "$GF" qualify --area lstm,s)"
    same $mode "gpuflockd --log-level" "$(words debug error info warn)" \
        "$(comp $mode "$BIN/gpuflockd" --log-level "")"
    same $mode "--config=FILE" "$CFG" "$(comp $mode "$GF" locks --config = "$T/cf")"
    same $mode "der's RTTM files" "$(words "$T/files/hyp.rttm" "$T/files/ref.rttm" "$T/files/sub")" \
        "$(comp $mode "$GF" der "$T/files/")"
    same $mode "--segmentations (.npy)" "$(words "$T/files/seg.npy" "$T/files/sub")" \
        "$(comp $mode "$GF" cluster --segmentations "$T/files/")"
    same $mode "--out (folders)" "$T/files/sub" "$(comp $mode "$GF" diarize --out "$T/files/")"
    same $mode "evidence's word" "$(words check prune)" "$(comp $mode "$GF" evidence "")"
    same $mode "--timeout takes a number" "" "$(comp $mode "$GF" exec --timeout "")"
done
# The command after `--` (bash-completion's own _command_offset completes it
# in full mode; outside a real completion it cannot be called: plain only).
comp plain "$GF" exec --gpu 0 -- ech | grep -qx echo || fail "plain: the command after -- is not completed"
same plain "exec before --" "--" "$(comp plain "$GF" exec --gpu 0 "")"

# With a broker: cards from its workers, job ids from its queue.
"$BIN/gpuflockd" --config "$CFG" --foreground 2>>"$T/broker.log" &
BROKER_PID=$!
up=0
for _ in $(seq 200); do
    [ "$("$GF" workers --config "$CFG" 2>/dev/null | grep -cE ' (idle|busy) ')" = 2 ] && { up=1; break; }
    sleep 0.05
done
if [ $up = 1 ]; then
    a=$("$GF" submit --config "$CFG" --hold -- true) && b=$("$GF" submit --config "$CFG" --hold -- true) ||
        fail "submit --hold failed"
    for mode in $modes; do
        same $mode "cancel's job ids" "$(words "$a" "$b")" "$(comp $mode "$GF" cancel --config "$CFG" "")"
        same $mode "--after's job ids" "$(words "$a" "$b")" \
            "$(comp $mode "$GF" --config "$CFG" submit --after "")"
        same $mode "show's one job id" "" "$(comp $mode "$GF" show --config "$CFG" "$a" "")"
        same $mode "exec --gpu (the workers)" "$(words 0 3)" "$(comp $mode "$GF" exec --config "$CFG" --gpu "")"
    done
    "$GF" cancel --config "$CFG" "$a" "$b" >/dev/null 2>&1
else
    fail "the broker or its workers did not come up: $(tail -5 "$T/broker.log")"
fi

if [ $failed -gt 0 ]; then
    echo "$failed completion checks failed"
    exit 1
fi
echo "completion: commands, options, cards, job ids and values complete as --help and the broker say"
