#!/bin/bash
# man_pages — the man pages (man/*.scd, built by make into $BUILD/man with
# scdoc) render and say what the programs do:
# - each page renders with `man --warnings -l` (80 columns) and no
#   message on stderr, and its .gz (what make install installs) is the page;
# - gpuflock(1) has a section "## gpuflock CMD" for every command that
#   `gpuflock help` lists and none for a command it does not list, so a new
#   command without a page section fails here;
# - each command's section names every option its --help defines
#   (tests/integration/lib/helpopts.sh), and its option terms (a line that
#   starts with *- and a tab-indented description under it) are options
#   --help defines (or --help): the same for the
#   OPTIONS of gpuflock(1), gpuflockd(8) and gpuflock-worker(8);
# - gpuflock.yaml(5) names every key of docs/config.md's table and every
#   device key.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
. tests/integration/lib/helpopts.sh
BIN=$BUILD/bin
MAN=$BUILD/man
if ! command -v scdoc >/dev/null && [ ! -f "$MAN/gpuflock.1" ]; then
    echo "skip: scdoc is not installed (Debian package scdoc; tools/setup-deps): make builds no man pages"
    exit 77
fi
command -v man >/dev/null || { echo "skip: man is not installed (Debian package man-db)"; exit 77; }

failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

pages=$(ls man/*.scd | sed 's|^man/||; s|\.scd$||')
for p in $pages; do
    page=$MAN/$p
    if [ ! -f "$page" ]; then
        fail "$page is not built (make builds the man pages where scdoc is installed)"
        continue
    fi
    err=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$page" 2>&1 >/dev/null)
    [ -z "$err" ] || fail "$p: man --warnings says: $err"
    zcat "$page.gz" 2>/dev/null | cmp -s - "$page" || fail "$page.gz is not $page compressed"
    MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q '^NAME' || fail "$p renders no NAME section"
done

# section FILE HEADING: the lines of FILE's section HEADING ("# X" or
# "## X"), without the heading, up to the next heading of its level or above.
section() {
    awk -v h="$2" '
        $0 == h { on = 1; next }
        on && /^# / { exit }
        on && h ~ /^## / && /^## / { exit }
        on { print }' "$1"
}
# check_options WHAT HELP_OPTIONS SECTION_TEXT
check_options() {
    local what=$1 want=$2 text=$3 o
    local named terms
    named=$(printf '%s\n' "$text" | text_options)
    terms=$(printf '%s\n' "$text" | awk '/^\*-/ { term = $0; next }
        term != "" && /^\t/ { print term } { term = "" }' | text_options)
    for o in $want; do
        grep -qxF -- "$o" <<<"$named" || fail "$what: $o (in --help) is not in the man page"
    done
    for o in $terms; do
        [ "$o" = --help ] && continue
        grep -qxF -- "$o" <<<"$want" || fail "$what: the man page describes $o, which --help does not"
    done
}

src=man/gpuflock.1.scd
commands=$("$BIN/gpuflock" help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
[ -n "$commands" ] || fail "gpuflock help lists no commands"
n=0
for c in $commands; do
    text=$(section "$src" "## gpuflock $c")
    if [ -z "$text" ]; then
        fail "gpuflock(1) has no section '## gpuflock $c' for the command $c (gpuflock help lists it)"
        continue
    fi
    check_options "gpuflock(1), $c" "$("$BIN/gpuflock" "$c" --help | help_options)" "$text"
    n=$((n + 1))
done
for c in $(sed -n 's/^## gpuflock \([a-z-]*\)$/\1/p' "$src"); do
    grep -qxF "$c" <<<"$commands" || fail "gpuflock(1) has a section for $c, which gpuflock help does not list"
done
check_options "gpuflock(1), OPTIONS" "$("$BIN/gpuflock" --help | help_options)" "$(section "$src" "# OPTIONS")"
for p in gpuflockd gpuflock-worker; do
    check_options "$p(8), OPTIONS" "$("$BIN/$p" --help | help_options)" \
        "$(section "man/$p.8.scd" "# OPTIONS")$(printf '\n')$(section "man/$p.8.scd" "# SYNOPSIS")"
done
echo "gpuflock(1): $n command sections, their options as each --help defines them"

# gpuflock.yaml(5): every key of docs/config.md.
yaml=man/gpuflock.yaml.5.scd
keys=$(awk -F'|' '/^\| `/ { print $2 }' docs/config.md | grep -oE '`[A-Za-z_.]+`' | tr -d '`' | sort -u)
[ "$(echo "$keys" | wc -w)" -ge 30 ] || fail "docs/config.md's table gave only $(echo "$keys" | wc -w) keys"
for k in $keys index kind lock shared_slots; do
    grep -qF "*$k*" "$yaml" || fail "gpuflock.yaml(5) does not describe the key $k (docs/config.md does)"
done
echo "gpuflock.yaml(5): the $(echo "$keys" | wc -w) keys of docs/config.md and the device keys"

if [ $failed -gt 0 ]; then
    echo "$failed man page checks failed"
    exit 1
fi
echo "man pages: $(echo $pages | wc -w) pages render without warnings and agree with --help and docs/config.md"
