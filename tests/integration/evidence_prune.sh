#!/bin/bash
# evidence_prune — `gpuflock evidence check` reports orphan records (a
# warning: the tables stay valid) and `gpuflock evidence prune` removes
# them: cited records kept, --dry-run removes nothing, a link named like a
# record is neither followed nor removed, tables that do not validate are
# not pruned at all.
set -u
BUILD=${BUILD:-build}
GF=$BUILD/bin/gpuflock
fail() { echo "FAIL: $*"; exit 1; }

dir=$("$BUILD/tests/helpers/evidence_fixture") || fail "fixture"
outside=$(mktemp -d)
trap 'rm -rf "$dir" "$outside"' EXIT
cited=$(ls "$dir/records" | sort)
[ "$(echo "$cited" | wc -l)" -eq 3 ] || fail "fixture records: $cited"

# Orphans: an uncited record (a copy of a cited one's text with a field
# changed, named by its hash), a record-named file outside JSON, and a link
# named like a record pointing outside the folder.
rec=$(grep -l '"accuracy"' "$dir"/records/*.json | head -1); rec=$(basename "$rec")
sed 's/20240601/7/' "$dir/records/$rec" >"$dir/tmp.json"
cmp -s "$dir/tmp.json" "$dir/records/$rec" && fail "the copy did not change"
sha=$(sha256sum "$dir/tmp.json" | cut -d' ' -f1)
mv "$dir/tmp.json" "$dir/records/$sha.json"
junk=$(printf 'd%.0s' $(seq 64))
echo "not json" >"$dir/records/$junk.json"
echo '{"keep": true}' >"$outside/target.json"
link=$(printf 'c%.0s' $(seq 64))
ln -s "$outside/target.json" "$dir/records/$link.json"

out=$("$GF" evidence check "$dir" 2>"$dir.err") || fail "orphans made the tables invalid: $(cat "$dir.err")"
err=$(cat "$dir.err"); rm -f "$dir.err"
echo "$out" | grep -q "valid: 1 binding" || fail "summary: $out"
echo "$err" | grep -q "warning: 3 orphan records" || fail "orphan count: $err"
# Few orphans: each is named without -v.
echo "$err" | grep -q "records/$sha.json: orphan: a record of a bound module" || fail "names: $err"
echo "$err" | grep -q "records/$link.json: orphan, not a record; kept by prune: a symbolic link" ||
    fail "link: $err"

# A dry run lists and removes nothing.
before=$(ls "$dir/records" | wc -l)
dry=$("$GF" evidence prune --dry-run "$dir") || fail "dry run failed"
echo "$dry" | grep -q "would remove $dir/records/$sha.json" || fail "dry run list: $dry"
echo "$dry" | grep -q "would remove 2 orphan records" || fail "dry run summary: $dry"
[ "$(ls "$dir/records" | wc -l)" -eq "$before" ] || fail "the dry run removed something"

# Tables that do not validate: refused, nothing removed.
sed -i 's/batch: 32/batch: 16/' "$dir/bindings/lstm.yaml"
"$GF" evidence prune "$dir" >/dev/null 2>&1; rc=$?
[ $rc -eq 65 ] || fail "prune on invalid tables: exit $rc"
[ "$(ls "$dir/records" | wc -l)" -eq "$before" ] || fail "prune on invalid tables removed something"
sed -i 's/batch: 16/batch: 32/' "$dir/bindings/lstm.yaml"

# The prune: the two regular orphans go; the cited records, the link and its
# target stay; the tables still validate and have no removable orphan left.
"$GF" evidence prune -v "$dir" >"$dir.out" 2>&1 || fail "prune: $(cat "$dir.out")"
grep -q "removed 2 orphan records" "$dir.out" || fail "prune summary: $(cat "$dir.out")"
grep -q "kept 1 orphan entry" "$dir.out" || fail "prune kept: $(cat "$dir.out")"
rm -f "$dir.out"
[ ! -e "$dir/records/$sha.json" ] && [ ! -e "$dir/records/$junk.json" ] || fail "orphans left"
[ -L "$dir/records/$link.json" ] || fail "the link was removed"
[ -f "$outside/target.json" ] || fail "the link's target was removed"
for r in $cited; do [ -f "$dir/records/$r" ] || fail "cited record $r removed"; done
"$GF" evidence check "$dir" >/dev/null 2>&1 || fail "pruned tables rejected"
"$GF" evidence prune "$dir" | grep -q "removed 0 orphan records" || fail "second prune"

"$GF" evidence prune --dry-run /nonexistent/evidence 2>/dev/null; [ $? -eq 66 ] || fail "missing dir not 66"
"$GF" evidence prune --force "$dir" 2>/dev/null; [ $? -eq 64 ] || fail "unknown option not 64"
"$GF" evidence check --dry-run "$dir" 2>/dev/null; [ $? -eq 64 ] || fail "check --dry-run not 64"
echo "ok"
