# session.bash — sourced by each session script that
# tests/integration/readme_examples.sh writes: the README's commands of one
# heading run in one bash, in order, as a reader would type them, with these
# between them. Each keeps $? as the last command left it, so an example's
# "echo $?" reads its own command's status.
#
# Set before it is sourced: RX_CFG (the private configuration), RX_NCARDS
# (its cards), RX_BGLOG (where background commands write).

RX_BROKER=0      # 1 once a broker of RX_CFG answers with every worker idle
RX_LOCKS=        # `gpuflock locks` before a background command

# Where each command's output starts: a line the README cannot hold.
__mark() {
    local rc=$?
    printf '\036%s\n' "$1"
    return $rc
}

__locks() { gpuflock locks --config "$RX_CFG" 2>&1; }

# Before a background command: what the cards look like.
__snap() {
    local rc=$?
    RX_LOCKS=$(__locks)
    return $rc
}

# After a background command (the README's "CMD &"): wait, as the reader
# does, until it has done what it is there for. gpuflockd: until its workers
# are up and idle. Anything else (a flock, an exec holding a card): until a
# lock is seen to change, for at most 5 s.
__bg() {   # FIRST-WORD
    local rc=$? i
    case "$1" in
    gpuflockd)
        for i in $(seq 400); do
            if [ "$(gpuflock workers --config "$RX_CFG" 2>/dev/null | grep -cE '^ *[0-9]+ idle ')" = "$RX_NCARDS" ]; then
                RX_BROKER=1
                break
            fi
            sleep 0.05
        done
        [ "$RX_BROKER" = 1 ] || echo "readme_examples: the broker did not come up (see $RX_BGLOG)"
        ;;
    *)
        for i in $(seq 100); do
            [ "$(__locks)" != "$RX_LOCKS" ] && break
            sleep 0.05
        done
        ;;
    esac
    return $rc
}

# After a command, while a broker runs: wait until its queue stands still
# (the same jobs, states and reasons twice, 0.1 s apart; run times left out),
# so a job just submitted is shown running or waiting as a moment later.
__settle() {
    local rc=$? prev='' cur
    if [ "$RX_BROKER" = 1 ]; then
        for _ in $(seq 100); do
            cur=$(gpuflock queue --config "$RX_CFG" 2>&1 | sed -E 's/ [^ ]+s( [0-9]+%)?$//')
            [ "$cur" = "$prev" ] && break
            prev=$cur
            sleep 0.1
        done
    fi
    return $rc
}

# The harness's own broker, for a heading whose commands need one and do
# not start it ("Every job command below needs a running broker").
__broker() {
    { gpuflockd --config "$RX_CFG" --foreground; } >>"$RX_BGLOG" 2>&1 &
    __bg gpuflockd
}
