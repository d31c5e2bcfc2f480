#!/bin/bash
# cli_style — the command line as a new user meets it.
#  1. `gpuflock --version` is `gpuflock version`; `version --help` is a usage;
#     `--help` and `help` list the commands.
#  2. --config FILE, --help and --version before the subcommand work as if
#     they came after its name, in gpuflock-cli and in the front (copied alone
#     into a folder of its own, so a job command it handed over instead of
#     running itself would fail).
#  3. One error style: every subcommand's unknown option and a typical bad
#     value print one line "gpuflock SUBCOMMAND: ..." and exit 64, through the
#     front and through gpuflock-cli; errors found at run time (a card not
#     configured, a broken configuration, the broker's refusals, no broker)
#     print that form too: never a log line, never the prefix twice.
. tests/integration/lib/jobs.bash
write_config
CLI="$(dirname "$GF")/gpuflock-cli"
mkdir -p "$T/bin"
cp "$GF" "$T/bin/gpuflock"
chmod 755 "$T/bin" "$T/bin/gpuflock"
LONE="$T/bin/gpuflock"
LOGLINE='^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} '
# the broker's requests, which its messages may start with
REQUESTS='submit|queue|show|wait|cancel|logs|workers|hold|release|requeue|drain|resume|purge|diarize'

# check_err SUB STATUS ARGS...: run PROG (default $GF) with ARGS; it must exit
# STATUS with every line of stderr in the user's form for SUB, none a log
# line, none with the prefix twice, and (ONE_LINE=1, the default) exactly one.
check_err() {
    local sub=$1 want=$2 prog=${PROG:-$GF}; shift 2
    "$prog" "$@" >"$T/out" 2>"$T/err"
    local rc=$? what="$(basename "$prog") $*"
    [ "$rc" = "$want" ] || fail "$what: exit $rc, expected $want; stderr: $(cat "$T/err")"
    [ -s "$T/err" ] || fail "$what: said nothing on stderr"
    ! grep -Eq "$LOGLINE" "$T/err" || fail "$what: a log line: $(cat "$T/err")"
    ! grep -Eq "^gpuflock $sub: ($REQUESTS): " "$T/err" || fail "$what: prefix twice: $(cat "$T/err")"
    if [ "${ONE_LINE:-1}" = 1 ]; then
        [ "$(wc -l <"$T/err")" = 1 ] || fail "$what: more than one line: $(cat "$T/err")"
        grep -q "^gpuflock $sub: " "$T/err" || fail "$what: not 'gpuflock $sub: ': $(cat "$T/err")"
    else
        head -1 "$T/err" | grep -q "^gpuflock $sub: " ||
            fail "$what: first line not 'gpuflock $sub: ': $(cat "$T/err")"
    fi
}

# ---- 1. version and help -------------------------------------------------
v=$("$GF" version) || fail "version"
echo "$v" | grep -Eq '^gpuflock [0-9]+\.[0-9]+\.[0-9]+ \(protocol [0-9]+\)$' || fail "version: $v"
for prog in "$GF" "$CLI" "$LONE"; do
    [ "$("$prog" --version)" = "$v" ] || fail "$prog --version: $("$prog" --version 2>&1)"
    [ "$("$prog" -V)" = "$v" ] || fail "$prog -V"
    "$prog" version --help | grep -q '^usage: gpuflock version' || fail "$prog version --help"
done
"$GF" --help >"$T/help" || fail "--help"
grep -q '^usage: gpuflock ' "$T/help" && grep -q '^  submit ' "$T/help" || fail "--help: $(cat "$T/help")"
[ "$("$GF" help)" = "$(cat "$T/help")" ] || fail "help differs from --help"
[ "$("$GF" -h)" = "$(cat "$T/help")" ] || fail "-h differs from --help"
"$GF" >/dev/null 2>"$T/err"; [ $? = 64 ] && grep -q '^usage: ' "$T/err" || fail "no command: not a usage"
SUBS=$(sed -n 's/^  \([a-z]*\) .*/\1/p' "$T/help")
[ "$(echo "$SUBS" | wc -l)" -ge 20 ] || fail "help lists: $SUBS"

# ---- 2. options before the subcommand --------------------------------------
"$GF" --help queue | grep -q '^usage: gpuflock queue' || fail "--help queue"
"$GF" --config "$CFG" --help wait | grep -q '^usage: gpuflock wait' || fail "--config --help wait"
# a command the front hands to gpuflock-cli takes the configuration: its models_dir
printf 'models_dir: %s\n' "$T/no-models" >"$T/models.yaml"
"$GF" --config "$T/models.yaml" models check 2>"$T/err"; rc=$?
[ $rc = 66 ] && grep -q "^gpuflock models: $T/no-models: no such models directory" "$T/err" ||
    fail "--config before models: exit $rc, $(cat "$T/err")"
"$GF" --config="$T/models.yaml" models check 2>/dev/null; [ $? = 66 ] || fail "--config=FILE before models"
# and one that reads none is not given it
"$GF" --config "$CFG" der "$T/none.rttm" "$T/none.rttm" 2>"$T/err"; rc=$?
[ $rc = 66 ] || fail "--config before der: exit $rc, $(cat "$T/err")"
# exec and locks (run in the front) take it
for prog in "$GF" "$CLI" "$LONE"; do
    [ "$("$prog" --config "$CFG" exec --gpu 1 -- sh -c 'echo $GPUFLOCK_LOCK_FILE')" = "$T/lock/gpu1.lock" ] ||
        fail "$prog --config before exec"
    "$prog" --config "$CFG" locks | grep -q "^1 .* $T/lock/gpu1.lock " || fail "$prog --config before locks"
done
check_err queue 69 --config "$CFG" queue       # no broker yet: said in the form too
grep -q "no broker is running" "$T/err" && grep -q "gpuflockd --config $CFG" "$T/err" ||
    fail "no broker: $(cat "$T/err")"
start_broker || exit 1
for prog in "$GF" "$CLI" "$LONE"; do
    j=$("$prog" --config "$CFG" submit --gpu 0 -- true) || fail "$prog --config before submit"
    "$prog" --config "$CFG" wait "$j" || fail "$prog --config CFG wait $j"
    "$prog" --config "$CFG" queue --all | grep -q "^ *$j " || fail "$prog --config before queue"
    "$prog" --config "$CFG" show "$j" | grep -q done || fail "$prog --config before show"
done
# the lone front ran those itself: a command it would hand over fails without gpuflock-cli
"$LONE" --config "$CFG" plan --gpu 0 >/dev/null 2>&1 && fail "the lone front ran plan"

# ---- 3. one error style ----------------------------------------------------
# A typical bad value for every subcommand `gpuflock help` lists (given
# after a --config before it, which reaches those that read one).
declare -A BAD=(
    [exec]="--gpu x -- true" [locks]="extra" [models]="frobnicate" [version]="extra"
    [submit]="--gpu x -- true" [run]="--time 0 -- true" [queue]="extra" [show]="abc"
    [history]="--since soon" [purge]="--before tomorrow"
    [wait]="--timeout x 1" [cancel]="x" [hold]="x" [release]="1,x" [requeue]="0"
    [drain]="x" [resume]="1 2" [logs]="1 2" [workers]="extra"
    [der]="--collar x a.rttm b.rttm" [plan]="--gpu x" [qualify]="--batch 3"
    [evidence]="frobnicate" [cluster]="--threads x" [diarize]="--gpu x a.wav"
)
for sub in $SUBS; do
    [ -n "${BAD[$sub]+set}" ] || fail "no bad value known for '$sub': add one above"
    one=1
    for prog in "$GF" "$CLI"; do
        PROG=$prog ONE_LINE=$one check_err "$sub" 64 "$sub" --no-such-option
        grep -q -- "--no-such-option" "$T/err" || fail "$sub: the option not named: $(cat "$T/err")"
        # shellcheck disable=SC2086  # (the words of the bad value are its arguments)
        PROG=$prog ONE_LINE=$one check_err "$sub" 64 --config "$CFG" "$sub" ${BAD[$sub]}
        PROG=$prog ONE_LINE=$one check_err "$sub" 64 "$sub" --config
    done
done
# diarize --slurm's options: a bad value of each, refused before Slurm is asked
for bad in "--tasks 0" "--tasks x" "--gpus-per-task -1" "--partition a;b" "--time soon"; do
    # shellcheck disable=SC2086
    check_err diarize 64 diarize --slurm $bad --out "$T/slurm-out" a.wav
done
check_err diarize 64 diarize --no-wait --out "$T/slurm-out" a.wav
check_err diarize 64 diarize --slurm a.wav
check_err diarize 64 diarize --slurm --local --out "$T/slurm-out" a.wav
# the checkpoint options: --local's, a bad number
for bad in "--local --checkpoint-s 0" "--local --checkpoint-s x" "--local --checkpoint-s 90000" \
           "--checkpoint-dir $T/ck" "--slurm --checkpoint-dir $T/ck --out $T/slurm-out"; do
    # shellcheck disable=SC2086
    check_err diarize 64 diarize $bad a.wav
done
[ ! -e "$T/ck" ] || fail "a refused diarize made its --checkpoint-dir"
[ ! -e "$T/slurm-out" ] || fail "a refused diarize --slurm made its --out"
# the forms getopt would word by itself
check_err queue 64 queue -q
grep -q "unknown option '-q'" "$T/err" || fail "short option: $(cat "$T/err")"
check_err queue 64 queue --json=1
grep -q "option '--json' takes no value" "$T/err" || fail "--json=1: $(cat "$T/err")"
check_err submit 64 submit --priority
grep -q "option '--priority' needs a value" "$T/err" || fail "--priority: $(cat "$T/err")"
check_err exec 64 exec -xq true
"$GF" --no-such-option wait 1 2>"$T/err"; [ $? = 64 ] && [ "$(wc -l <"$T/err")" = 1 ] &&
    grep -q "^gpuflock: unknown option '--no-such-option'" "$T/err" || fail "global: $(cat "$T/err")"
"$GF" frobnicate 2>"$T/err"; [ $? = 64 ] && [ "$(wc -l <"$T/err")" = 1 ] &&
    grep -q "^gpuflock: unknown command 'frobnicate'" "$T/err" || fail "command: $(cat "$T/err")"

# Errors found at run time, from library code (common/, cli/jobcards) and
# from the broker, read as the command's own.
check_err exec 64 exec --config "$CFG" --gpu 5 true
grep -q "card 5 is not configured" "$T/err" || fail "exec --gpu 5: $(cat "$T/err")"
PROG=$CLI check_err exec 64 exec --config "$CFG" --gpu 5 true
check_err exec 78 exec --config "$T/missing.yaml" true
printf 'devices: [ {index: x} ]\n' >"$T/bad.yaml"
check_err locks 78 locks --config "$T/bad.yaml"
grep -q "bad.yaml:1: " "$T/err" || fail "locks, bad config: $(cat "$T/err")"
check_err plan 69 plan --config "$CFG" --gpu 5
check_err submit 64 submit --config "$CFG" --gpu 7 -- true
[ "$(cat "$T/err")" = "gpuflock submit: no card 7 is configured" ] || fail "submit --gpu 7: $(cat "$T/err")"
check_err run 64 run --config "$CFG" --gpu 7 -- true
check_err submit 64 submit --config "$CFG" --after 999 -- true
grep -q "no job 999" "$T/err" || fail "submit --after 999: $(cat "$T/err")"
check_err show 64 show --config "$CFG" 999
check_err cancel 1 cancel --config "$CFG" 999
check_err hold 1 hold --config "$CFG" 999
if [ "$(id -u)" = 0 ]; then
    check_err drain 64 drain --config "$CFG" 7
else
    check_err drain 77 drain --config "$CFG" 0
fi
grep -Eq "^gpuflock drain: (no card 7 is configured|only root may drain a card)$" "$T/err" ||
    fail "drain: $(cat "$T/err")"
stop_broker
check_err wait 69 --config "$CFG" wait 1
echo "ok: --version, help, options before the subcommand (front and gpuflock-cli), one error style"
