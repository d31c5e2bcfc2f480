#!/bin/bash
# readme_examples — every example of README.md that a CPU machine can run is
# run and its output compared with what the README shows, so the README
# cannot drift from the program.
#
# The examples are found in README.md itself (readme/examples.awk): a code
# block whose first line starts with "$ " is one; its "$ " lines are commands
# and the lines after each are what it prints ("..." for any lines). The
# commands under one heading run in one shell, in order, in a scratch root
# of their own ($T): the README's /home/ana is $T/home/ana, the working
# folder, with a private config/cpu2.yaml (and cpu2.yaml) of two CPU cards,
# a copy of evidence/, ../shared (folders made, files linked), and the files
# the examples take from the reader (readme/: train.py, eval.py, step.sh,
# ref.rttm, hyp.rttm; a.wav and b.wav, copies of sample.wav; bad.wav, not
# audio); any other /tmp/X is
# $T/tmp/X; /tmp/gpuflock-demo, cpu2.yaml's folder, is a private folder of
# the same length (the locks table is padded to it); the source tree is
# /home/ana/gpuflock, the user ana. A heading whose commands need a broker
# and do not start one gets a private one. readme/session.bash has what
# runs between the commands (a background command waited for, a broker's
# queue left to settle).
#
# What a command prints (stdout line-buffered, as on a terminal, and stderr
# together) is compared line by line with the README's after the mappings
# above and readme/normalise.sed (pids, clocks, run times, this machine's
# cores and memory, how its workers supervise jobs); nothing else is
# loosened.
#
# Skipped by rule, each with a "skip: " line (tests/run-tests counts them):
# an example that needs a CUDA card, the model files (gated downloads), the
# network, root and other real users, or what this machine lacks (../shared,
# python3, flock, the trained VAD that tools/fetch-vad writes: the weight-free
# examples show its turns).
set -u
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd -P)
BUILD=${BUILD:-build}
BIN=$(cd "$BUILD/bin" 2>/dev/null && pwd -P) || { echo "FAIL: no $BUILD/bin"; exit 1; }
HERE=$REPO/tests/integration/readme
README=${README:-$REPO/README.md}
# The test data (../shared/data), where it is.
SHARED=$(cd "$REPO/../shared" 2>/dev/null && pwd -P) || SHARED=
[ -n "$SHARED" ] && [ -f "$SHARED/data/audio/sample.wav" ] || SHARED=
SESSION_TIMEOUT=${SESSION_TIMEOUT:-240}

W=$(mktemp -d --suffix=.gf-readme)
W=$(cd "$W" && pwd -P)
DEMO=
SID=
cleanup() {
    end_session
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT

failed=0
checked=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# --- The sessions' ends: the brokers gently (they stop their workers, which
# stop their jobs), then whatever else the session started, by pid.
alive() { kill -0 "$1" 2>/dev/null; }
running() {   # a child of ours that has not ended (a zombie has)
    local st
    st=$(ps -o stat= -p "$1" 2>/dev/null) && [ -n "$st" ] && [ "${st#Z}" = "$st" ]
}
end_session() {
    local p f
    if [ -n "$DEMO" ] && [ -f "$DEMO/run/gpuflockd.pid" ]; then
        p=$(cat "$DEMO/run/gpuflockd.pid" 2>/dev/null)
        if [ -n "$p" ] && alive "$p"; then
            kill -TERM "$p"
            for _ in $(seq 200); do alive "$p" || break; sleep 0.1; done
        fi
    fi
    if [ -n "$SID" ]; then
        for p in $(ps -o pid= -s "$SID" 2>/dev/null); do kill -TERM "$p" 2>/dev/null; done
        for _ in $(seq 20); do [ -z "$(ps -o pid= -s "$SID" 2>/dev/null)" ] && break; sleep 0.1; done
        for p in $(ps -o pid= -s "$SID" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    fi
    if [ -n "$DEMO" ]; then
        for f in "$DEMO"/run/worker*.pid; do
            [ -f "$f" ] || continue
            p=$(cat "$f" 2>/dev/null)
            [ -n "$p" ] && alive "$p" && kill -KILL "$p" 2>/dev/null
        done
        rm -rf "$DEMO"
    fi
    SID='' DEMO=''
}

# --- Mappings between the README's world and this run's.
sed_quote() { printf '%s' "$1" | sed 's/[][\.*^$|/]/\\&/g'; }
# README -> here, for the commands.
map_command() {   # T DEMO < cmd
    sed -e "s|/tmp/gpuflock-demo|\x01|g" \
        -e "s|/tmp/|$(sed_quote "$1")/tmp/|g" \
        -e "s|\x01|$(sed_quote "$2")|g" \
        -e "s|/home/ana/gpuflock|$(sed_quote "$REPO")|g" \
        -e "s|/home/ana|$(sed_quote "$1")/home/ana|g"
}
# here -> README, for what the commands print.
USER_NAME=$(id -un)
map_output() {   # T DEMO < output
    local u pad=
    local args=(-e "s|$(sed_quote "$REPO")|/home/ana/gpuflock|g"
                -e "s|$(sed_quote "$2")|/tmp/gpuflock-demo|g"
                -e "s|$(sed_quote "$1")||g")
    if [ "$USER_NAME" != ana ]; then
        u=$(sed_quote "$USER_NAME")
        # In a padded column (queue's USER) the name keeps the column's width.
        if [ ${#USER_NAME} -ge 3 ]; then
            pad=$(printf '%*s' $((${#USER_NAME} - 3)) '')
            args+=(-E -e "s/(^| )$u(  +)/\1ana$pad\2/g")
        else
            args+=(-E -e "s/(^| )$u$(printf '%*s' $((3 - ${#USER_NAME})) '')(  +)/\1ana\2/g")
        fi
        args+=(-e "s/\<$u\>/ana/g")
    fi
    sed "${args[@]}"
}
normalise() { sed -E -f "$HERE/normalise.sed"; }
# The trained VAD of this tree (diar/vad.h: the build's default file).
VAD_OK=""
[ -r "$REPO/.cache/vad/silero_vad.safetensors" ] && VAD_OK=1

# --- The rules that leave an example out: a reason, or nothing.
skip_reason() {   # the block's commands on stdin
    local text
    text=$(cat)
    if grep -qE 'gpuflock (qualify|plan .*--gpu|cluster .*--gpu)|diarize .*--local.*--gpu|diarize .*--gpu.*--local|nvidia-smi|make gpu-' <<<"$text"; then
        echo "needs a CUDA card"
    elif grep -qE 'models check|convert-checkpoints' <<<"$text" ||
         grep -oE -- '--models +[^ ]+' <<<"$text" | grep -qvE -- '--models +/nonexistent'; then
        echo "needs the converted model files (gated downloads: README, Model files)"
    elif grep -qE 'https?://|tcp://|\<(curl|wget|apt-get|pip3?|setup-deps)\>' <<<"$text"; then
        echo "needs the network"
    elif grep -qE '(^|[;&|(] *)(sudo|su|runuser|setpriv)\>|gpuflock (drain|resume)\>' <<<"$text"; then
        echo "needs root and other real users"
    elif grep -qE '(^|[;&|( ])make\>' <<<"$text"; then
        echo "builds and runs the project's targets (make)"
    elif grep -qE '\.\./shared|\.wav\>' <<<"$text" && [ -z "$SHARED" ]; then
        echo "needs ../shared/data (the test data), not here"
    elif grep -qE 'gpuflock (diarize|show)\>' <<<"$text" && [ -z "$VAD_OK" ]; then
        echo "needs the trained VAD (tools/fetch-vad: no network at set-up)"
    elif grep -qE '\<python3\>' <<<"$text" && ! command -v python3 >/dev/null; then
        echo "needs python3, not here"
    elif grep -qE '(^|[;&|( ])flock\>' <<<"$text" && ! command -v flock >/dev/null; then
        echo "needs flock(1), not here"
    fi
}
needs_broker() {  # the heading's commands on stdin
    local text
    text=$(cat)
    grep -qE '(^|[;&|( ])gpuflockd\>' <<<"$text" && return 1
    grep -qE 'gpuflock (submit|run|queue|show|wait|cancel|hold|release|requeue|drain|resume|logs|workers)\>' <<<"$text" && return 0
    grep -E 'gpuflock diarize\>' <<<"$text" | grep -qv -- '--local'
}

# --- One heading's scratch root.
make_root() {   # T
    local T=$1 home=$1/home/ana
    mkdir -p "$home/config" "$T/tmp"
    # cpu2.yaml's folder moved to a private one of the same length, and a
    # broker that stops at once (the examples leave jobs running).
    DEMO=$(mktemp -d /tmp/gpuflock-XXXX)
    { sed "s|/tmp/gpuflock-demo|$DEMO|g" "$REPO/config/cpu2.yaml"
      printf 'broker:\n  kill_grace_s: 1\n  shutdown_deadline_s: 1\n'; } >"$home/config/cpu2.yaml"
    cp "$home/config/cpu2.yaml" "$home/cpu2.yaml"
    cp -r "$REPO/evidence" "$home/evidence"
    cp "$HERE"/train.py "$HERE"/eval.py "$HERE"/step.sh "$HERE"/ref.rttm "$HERE"/hyp.rttm "$home/"
    if [ -n "$SHARED" ]; then
        # Its folders made anew, its files links: what an example writes
        # beside the test data lands here, never in ../shared.
        cp -rs "$SHARED" "$T/home/shared"
        find "$T/home/shared" -type d -exec chmod u+w {} +   # its modes came along
        cp "$SHARED/data/audio/sample.wav" "$home/a.wav"
        cp "$SHARED/data/audio/sample.wav" "$home/b.wav"
    fi
    echo "not audio" >"$home/bad.wav"
}

awk -v out="$W/ex" -f "$HERE/examples.awk" "$README" || { echo "FAIL: reading $README"; exit 1; }
if [ ! -d "$W/ex" ] || [ -z "$(ls "$W/ex")" ]; then echo "FAIL: no examples in $README"; exit 1; fi

for sec in "$W"/ex/s*; do
    heading=$(cat "$sec/heading")
    # ONLY=REGEX: the headings that match it alone (while editing the README).
    [ -n "${ONLY:-}" ] && ! grep -qE -- "$ONLY" <<<"$heading" && continue
    # The blocks (by their first line), and those the rules leave out.
    run=()
    declare -A reason=()
    for c in "$sec"/c*.cmd; do
        c=${c%.cmd}
        read -r _ b <"$c.line"
        if [ -z "${reason[$b]+x}" ]; then
            reason[$b]=$(for l in "$sec"/c*.line; do
                             read -r _ bb <"$l"; [ "$bb" = "$b" ] && cat "${l%.line}.cmd"
                         done | skip_reason)
            [ -n "${reason[$b]}" ] && echo "skip: README line $b (\`$(head -1 "$c.cmd")\`): ${reason[$b]}"
        fi
        [ -z "${reason[$b]}" ] && run+=("$c")
    done
    unset reason
    [ ${#run[@]} -eq 0 ] && continue

    T=$W/root.$(basename "$sec")
    make_root "$T"
    home=$T/home/ana
    script=$T/session.sh
    {
        printf 'echo $$ >%q\n' "$T/sid"
        printf 'RX_CFG=%q RX_NCARDS=%d RX_BGLOG=%q\n' "$home/config/cpu2.yaml" \
            "$(grep -cE '^ *- *index:' "$home/config/cpu2.yaml")" "$T/background.log"
        printf '. %q\n' "$HERE/session.bash"
        printf 'cd %q || exit 1\n' "$home"
        if cat "${run[@]/%/.cmd}" | needs_broker; then echo __broker; fi
        for c in "${run[@]}"; do
            n=$(basename "$c")
            cmd=$(map_command "$T" "$DEMO" <"$c.cmd")
            if grep -qE '[^&]&[[:space:]]*$' <<<"$cmd"; then
                # In the background: its output to a log (the README shows
                # none), then waited for as the reader would.
                first=$(sed -E 's/^[[:space:]]*([^[:space:]]+).*/\1/;q' <<<"$cmd")
                printf '__mark %s\n__snap\n{ %s\n} >>"$RX_BGLOG" 2>&1 &\n__bg %q\n' \
                    "$n" "$(sed -E 's/&[[:space:]]*$//' <<<"$cmd")" "$(basename "$first")"
            else
                printf '__mark %s\n%s\n__settle\n' "$n" "$cmd"
            fi
        done
        echo '__mark end'
    } >"$script"

    # The session in a session of its own (setsid; its shell, the leader,
    # writes its pid, the session's id), so that what it leaves behind is
    # found by that id; stdout line-buffered as on a terminal, so its lines
    # and stderr's come in the order a reader sees.
    env -u GPUFLOCK_EVIDENCE -u GPUFLOCK_FORCE_LIBRARY -u GPUFLOCK_MODELS \
        HOME="$home" GPUFLOCK_CONFIG="$home/config/cpu2.yaml" PATH="$BIN:$PATH" \
        setsid -w stdbuf -oL bash "$script" </dev/null >"$T/out" 2>&1 &
    leader=$!
    timed_out=0
    for _ in $(seq $((SESSION_TIMEOUT * 10))); do
        [ -z "$SID" ] && [ -s "$T/sid" ] && SID=$(cat "$T/sid")
        running "$leader" || break
        sleep 0.1
    done
    [ -z "$SID" ] && [ -s "$T/sid" ] && SID=$(cat "$T/sid")
    running "$leader" && timed_out=1
    demo=$DEMO
    end_session
    wait 2>/dev/null

    # Split the output at the marks, then compare command by command.
    awk -v dir="$T" '/^\036/ { f = dir "/" substr($0, 2) ".out"; printf "" > f; next }
                     f != "" { print > f }' "$T/out"
    hung=                           # the command the session was in when it ran out of time
    [ "$timed_out" = 1 ] && hung=$(grep -a $'^\036' "$T/out" | tail -1 | cut -c2-)
    for c in "${run[@]}"; do
        n=$(basename "$c")
        read -r line _ <"$c.line"
        what="README line $line (\`$(head -1 "$c.cmd")\`)"
        if [ "$n" = "$hung" ]; then
            fail "$heading: $what had not ended when the session's ${SESSION_TIMEOUT} s ran out"
            continue
        fi
        if [ ! -f "$T/$n.out" ]; then
            if [ -n "$hung" ]; then
                fail "$heading: $what did not run (a command before it had not ended)"
            else
                fail "$heading: $what did not run (the session ended first; the end of its output: $(tail -5 "$T/out" | tr '\036' '#' | tr '\n' ' '))"
            fi
            continue
        fi
        if grep -qE '[^&]&[[:space:]]*$' "$c.cmd"; then
            [ -s "$T/$n.out" ] && fail "$heading: $what: $(cat "$T/$n.out")"
            checked=$((checked + 1))
            continue
        fi
        normalise <"$c.exp" >"$T/$n.want"
        map_output "$T" "$demo" <"$T/$n.out" 2>/dev/null | normalise >"$T/$n.got"
        if awk -f "$HERE/match.awk" "$T/$n.want" "$T/$n.got"; then
            checked=$((checked + 1))
        else
            fail "$heading: $what prints otherwise (- README, + this run, both normalised):"
            diff -u "$T/$n.want" "$T/$n.got" | tail -n +3 >"$T/$n.diff"
            head -40 "$T/$n.diff"
            [ "$(wc -l <"$T/$n.diff")" -gt 40 ] && echo "($(($(wc -l <"$T/$n.diff") - 40)) more lines of diff)"
        fi
    done
    if [ "$timed_out" = 1 ] && { [ -z "$hung" ] || [ "$hung" = end ]; }; then
        fail "$heading: the session ran past ${SESSION_TIMEOUT} s"
    fi
done

echo "$checked commands checked, $failed failed"
[ "$failed" -eq 0 ] || exit 1
echo "ok"
