#!/bin/bash
# install — `make install DESTDIR=... PREFIX=/usr` from the existing build,
# and the .deb made from the same staging:
# 1. install builds nothing (no file of $BUILD changes) and puts exactly the
#    files below, with these modes and links; the evidence is the tree's;
#    the units name $PREFIX/bin (and PREFIX=/usr/local gives /usr/local/bin);
# 2. the installed programs run from DESTDIR: --version, evidence check and
#    plan find the installed evidence, models check the installed voice
#    activity detector (where .cache/vad has it), exec on a declared CPU card with a
#    private config, gpuflockd starting the installed worker and guard for a
#    job; the installed man pages render; the installed completion loads
#    through bash-completion's loader (gpuflockd's link too);
# 3. systemd-analyze verify accepts the installed units (their programs taken
#    from DESTDIR), where systemd-analyze exists;
# 4. make deb: the package holds the same files, modes and links (its own
#    copyright, changelog and lintian overrides besides; its programs are the
#    installed ones stripped), its control fields, conffile and maintainer
#    scripts (nothing started); lintian finds no error; dpkg --root installs
#    it into a scratch root (the postinst makes the lock files there) and
#    removes it again, purge last;
#    (the Slurm plugin, installed to usr/lib/slurm where it was built, is
#    not in the package: see the Makefile's install-spank);
# 5. a second install keeps an edited /etc/gpuflock/gpuflock.yaml (and says
#    so, putting gpuflock.yaml.example beside it) and leaves no stale
#    evidence; make uninstall leaves the configuration only.
set -u
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd -P)
BUILD=${BUILD:-build}
BUILD_ABS=$(cd "$BUILD" 2>/dev/null && pwd -P) || { echo "FAIL: no $BUILD"; exit 1; }
for b in gpuflock gpuflock-exec gpuflock-cli gpuflockd gpuflock-worker gpuflock-guard; do
    [ -x "$BUILD/bin/$b" ] || { echo "FAIL: $BUILD/bin/$b is not built"; exit 1; }
done
if [ ! -f "$BUILD/man/gpuflock.1.gz" ]; then
    command -v scdoc >/dev/null &&
        { echo "FAIL: $BUILD/man/gpuflock.1.gz is not built, though scdoc is installed"; exit 1; }
    echo "skip: make install needs the man pages: scdoc is not installed (Debian package scdoc; tools/setup-deps)"
    exit 77
fi

T=$(mktemp -d --suffix=.gf-install)
chmod 755 "$T"
D=$T/root
BROKER_PID=
cleanup() {
    if [ -n "$BROKER_PID" ]; then
        kill -TERM "$BROKER_PID" 2>/dev/null
        wait "$BROKER_PID" 2>/dev/null
    fi
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
# make in the source tree, as a user would run it, whatever make runs us.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$REPO" BUILD="$BUILD_ABS" "$@"; }

# The tree below a root: "MODE PATH" of each file, "link PATH -> TARGET" of
# each link, "dir PATH MODE" of the folders gpuflock owns. The evidence
# records are counted apart (records: N).
tree_of() {
    (
        cd "$1" || exit 1
        find . -path ./DEBIAN -prune -o -path ./var -prune -o -path ./run -prune -o \
            -path ./usr/share/gpuflock/evidence/records -prune -o \( -type f -printf '%m %P\n' \) -o \
            \( -type l -printf 'link %P -> %l\n' \)
        for d in usr/lib/gpuflock usr/share/gpuflock usr/share/gpuflock/evidence \
            usr/share/gpuflock/evidence/records usr/share/doc/gpuflock usr/share/doc/gpuflock/examples \
            etc/gpuflock; do
            [ -d "$d" ] && echo "dir $d $(stat -c %a "$d")"
        done
        [ -d usr/share/gpuflock/evidence/records ] &&
            echo "records: $(find usr/share/gpuflock/evidence/records -type f -perm 0644 | wc -l)"
    ) | LC_ALL=C sort
}

records=$(find evidence/records -type f | wc -l)
expected=$(LC_ALL=C sort <<EOF | sed "/^$/d"
644 etc/gpuflock/gpuflock.yaml
644 usr/lib/systemd/system/gpuflock-worker@.service
644 usr/lib/systemd/system/gpuflockd.service
644 usr/lib/tmpfiles.d/gpuflock.conf
644 usr/share/bash-completion/completions/gpuflock
644 usr/share/doc/gpuflock/examples/cpu2.yaml
644 usr/share/doc/gpuflock/examples/gpuflock.example.yaml
644 usr/share/man/man1/gpuflock.1.gz
644 usr/share/man/man5/gpuflock.yaml.5.gz
644 usr/share/man/man8/gpuflock-worker.8.gz
644 usr/share/man/man8/gpuflockd.8.gz
644 usr/include/gpuflock.h
644 usr/lib/pkgconfig/gpuflock.pc
755 usr/lib/libgpuflock.so.0
link usr/lib/libgpuflock.so -> libgpuflock.so.0
$([ -f "$BUILD/lib/slurm/gpuflock_spank.so" ] && echo "755 usr/lib/slurm/gpuflock_spank.so")
$(cd evidence && find . -path ./records -prune -o -type f -printf '644 usr/share/gpuflock/evidence/%P\n')
755 usr/lib/gpuflock/gpuflock
755 usr/lib/gpuflock/gpuflock-cli
755 usr/lib/gpuflock/gpuflock-exec
755 usr/lib/gpuflock/gpuflock-guard
755 usr/lib/gpuflock/gpuflock-worker
755 usr/lib/gpuflock/gpuflockd
link usr/bin/gpuflock -> ../lib/gpuflock/gpuflock
link usr/bin/gpuflock-worker -> ../lib/gpuflock/gpuflock-worker
link usr/bin/gpuflockd -> ../lib/gpuflock/gpuflockd
link usr/lib/gpuflock/evidence -> ../../share/gpuflock/evidence
link usr/share/bash-completion/completions/gpuflock-worker -> gpuflock
link usr/share/bash-completion/completions/gpuflockd -> gpuflock
dir etc/gpuflock 755
dir usr/lib/gpuflock 755
dir usr/share/doc/gpuflock 755
dir usr/share/doc/gpuflock/examples 755
dir usr/share/gpuflock 755
dir usr/share/gpuflock/evidence 755
dir usr/share/gpuflock/evidence/records 755
records: $records
EOF
)
# The voice activity detector's weights, where tools/fetch-vad wrote them.
VAD=.cache/vad/silero_vad.safetensors
if [ -f "$VAD" ]; then
    expected=$(LC_ALL=C sort <<EOF
$expected
644 usr/share/gpuflock/silero_vad.LICENSE
644 usr/share/gpuflock/silero_vad.safetensors
link usr/lib/gpuflock/silero_vad.safetensors -> ../../share/gpuflock/silero_vad.safetensors
EOF
)
else
    echo "skip: the VAD's installed file: $VAD is absent (tools/fetch-vad)"
fi

# --- 1. make install, from the build as it stands.
touch "$T/stamp"
sleep 1
(umask 027 && mk install DESTDIR="$D" PREFIX=/usr) >"$T/install.log" 2>&1 ||
    { cat "$T/install.log"; echo "FAIL: make install failed"; exit 1; }
changed=$(find "$BUILD_ABS/bin" "$BUILD_ABS/man" "$BUILD_ABS/lib" "$BUILD_ABS/obj" -newer "$T/stamp" | head -5)
[ -z "$changed" ] || fail "make install wrote into the build: $changed"
got=$(tree_of "$D")
if [ "$got" != "$expected" ]; then
    fail "make install put other files than expected (< expected, > installed):"
    diff <(echo "$expected") <(echo "$got") | grep '^[<>]'
fi
diff -r evidence "$D/usr/share/gpuflock/evidence" >/dev/null || fail "the installed evidence is not the tree's"
if [ -f "$VAD" ]; then
    cmp -s "$VAD" "$D/usr/share/gpuflock/silero_vad.safetensors" || fail "the installed VAD file is not the tree's"
fi
for b in gpuflock gpuflock-exec gpuflock-cli gpuflockd gpuflock-worker gpuflock-guard; do
    cmp -s "$BUILD/bin/$b" "$D/usr/lib/gpuflock/$b" || fail "usr/lib/gpuflock/$b is not $BUILD/bin/$b"
done
[ ! -f "$BUILD/lib/slurm/gpuflock_spank.so" ] ||
    cmp -s "$BUILD/lib/slurm/gpuflock_spank.so" "$D/usr/lib/slurm/gpuflock_spank.so" ||
    fail "usr/lib/slurm/gpuflock_spank.so is not $BUILD/lib/slurm/gpuflock_spank.so"
cmp -s config/gpuflock.example.yaml "$D/etc/gpuflock/gpuflock.yaml" || fail "etc/gpuflock/gpuflock.yaml is not the example"
grep -qx 'ExecStart=/usr/bin/gpuflockd --foreground --config /etc/gpuflock/gpuflock.yaml' \
    "$D/usr/lib/systemd/system/gpuflockd.service" || fail "gpuflockd.service does not start /usr/bin/gpuflockd"
grep -qx 'ExecStart=/usr/bin/gpuflock-worker --device %i --config /etc/gpuflock/gpuflock.yaml' \
    "$D/usr/lib/systemd/system/gpuflock-worker@.service" || fail "gpuflock-worker@.service does not start /usr/bin/gpuflock-worker"
grep -l '@[A-Z]*@\|^# Template' "$D"/usr/lib/systemd/system/* && fail "a unit keeps its template's placeholders or note"
mk install DESTDIR="$T/local" >/dev/null 2>&1 || fail "make install with the default PREFIX failed"
grep -qx 'ExecStart=/usr/local/bin/gpuflockd --foreground --config /etc/gpuflock/gpuflock.yaml' \
    "$T/local/usr/local/lib/systemd/system/gpuflockd.service" || fail "PREFIX=/usr/local: the unit does not start /usr/local/bin/gpuflockd"
[ "$("$T/local/usr/local/bin/gpuflock" version)" = "$("$BUILD/bin/gpuflock" version)" ] ||
    fail "PREFIX=/usr/local: /usr/local/bin/gpuflock does not run"
echo "make install: $(echo "$expected" | wc -l) entries as expected ($records evidence records), from the build as it was"

# --- 2. The installed programs, from DESTDIR.
GF=$D/usr/bin/gpuflock
[ "$("$GF" --version)" = "$("$BUILD/bin/gpuflock" --version)" ] || fail "gpuflock --version: $("$GF" --version 2>&1)"
"$D/usr/bin/gpuflockd" --help | grep -q '^usage: gpuflockd' || fail "gpuflockd --help"
"$D/usr/bin/gpuflock-worker" --help | grep -q '^usage: gpuflock-worker' || fail "gpuflock-worker --help"
EV=$D/usr/share/gpuflock/evidence
out=$(env -u GPUFLOCK_EVIDENCE "$GF" evidence check 2>&1)
[[ $out == "$EV: valid: "* ]] || fail "the installed gpuflock checks other evidence than the installed: $out"
out=$(env -u GPUFLOCK_EVIDENCE "$GF" plan --card "NVIDIA H200:9.0:132" 2>&1 | grep '^evidence:')
[[ $out == "evidence:  $EV ("* ]] || fail "the installed plan reads other evidence: $out"
out=$(GPUFLOCK_EVIDENCE=$REPO/evidence "$GF" evidence check 2>&1)
[[ $out == "$REPO/evidence: valid: "* ]] || fail "GPUFLOCK_EVIDENCE does not come first: $out"
if [ -f "$VAD" ]; then
    # models check names the VAD file the installed program finds: the installed one
    mkdir -p "$T/nomodels" && : >"$T/nomodels/MANIFEST.sha256"
    out=$("$GF" models check "$T/nomodels" 2>&1 | grep '^silero_vad.safetensors')
    [[ $out == *" ok ($(realpath "$D")/usr/share/gpuflock/silero_vad.safetensors)" ]] ||
        fail "the installed gpuflock finds another VAD file: $out"
fi

CFG=$T/cfg.yaml
mkdir -p "$T/lock"
cat >"$CFG" <<YAML
run_dir: $T/run
state_dir: $T/state
bench_lock: $T/lock/bench.lock
devices:
  - {index: 0, kind: cpu, lock: $T/lock/gpu0.lock}
  - {index: 1, kind: cpu, lock: $T/lock/gpu1.lock}
broker:
  heartbeat_interval_ms: 200
  shutdown_deadline_s: 2
  kill_grace_s: 1
YAML
out=$("$GF" exec --config "$CFG" --gpu 1 -- sh -c 'echo $CUDA_VISIBLE_DEVICES' 2>&1)
[ "$out" = 1 ] || fail "the installed gpuflock exec on CPU card 1 printed: $out"
env -u GPUFLOCK_EVIDENCE "$D/usr/bin/gpuflockd" --config "$CFG" --foreground 2>"$T/broker.log" &
BROKER_PID=$!
up=0
for _ in $(seq 200); do
    [ "$("$GF" workers --config "$CFG" 2>/dev/null | grep -cE ' (idle|busy) ')" = 2 ] && { up=1; break; }
    sleep 0.05
done
if [ $up = 1 ]; then
    out=$("$GF" run --config "$CFG" --gpu 0 -- sh -c 'echo job on $CUDA_VISIBLE_DEVICES' 2>&1)
    [ "$out" = "job on 0" ] || fail "a job through the installed broker printed: $out"
    pid=$(cat "$T/run/worker0.pid" 2>/dev/null)
    [ "$(readlink "/proc/$pid/exe")" = "$D/usr/lib/gpuflock/gpuflock-worker" ] ||
        fail "the broker's worker is $(readlink "/proc/$pid/exe"), not the installed one"
    esc=${EV//\//\\/}   # JSON writes "/" as "\/"
    "$GF" workers --config "$CFG" --json | grep -qF "\"evidence\":\"$esc\"" ||
        fail "the installed worker planned from other evidence than $EV"
    echo "the installed broker ran a job through the installed worker and guard"
else
    fail "the installed broker's workers did not come up: $(tail -5 "$T/broker.log")"
fi
kill -TERM "$BROKER_PID" 2>/dev/null
wait "$BROKER_PID" 2>/dev/null
BROKER_PID=

if command -v man >/dev/null; then
    for p in man1/gpuflock.1 man5/gpuflock.yaml.5 man8/gpuflockd.8 man8/gpuflock-worker.8; do
        err=$(MANWIDTH=80 man --warnings -l "$D/usr/share/man/$p.gz" 2>&1 >/dev/null)
        [ -z "$err" ] || fail "$p: $err"
    done
    [ "$(MANPATH=$D/usr/share/man man -w gpuflockd 2>/dev/null)" = "$D/usr/share/man/man8/gpuflockd.8.gz" ] ||
        fail "man does not find the installed gpuflockd(8) in its folder"
else
    echo "skip: the installed man pages: man is not installed (Debian package man-db)"
fi
if [ -f /usr/share/bash-completion/bash_completion ]; then
    out=$(XDG_DATA_DIRS=$D/usr/share bash --norc --noprofile -c '
        . /usr/share/bash-completion/bash_completion
        for p in gpuflock gpuflockd gpuflock-worker; do
            _completion_loader "$p" 2>/dev/null
            complete -p "$p" 2>/dev/null | grep -q -- "-F _gpuflock " || echo "$p: not loaded"
        done
        COMP_WORDS=("$1" sub); COMP_CWORD=1; COMP_LINE="$1 sub"; COMP_POINT=${#COMP_LINE}
        _gpuflock; echo "${COMPREPLY[*]}"' comp "$GF")
    [ "$out" = submit ] || fail "the installed completion: $out"
else
    echo "skip: the installed completion's loading: bash-completion is not installed"
fi

# --- 3. The units, as systemd reads them.
if command -v systemd-analyze >/dev/null; then
    mkdir -p "$T/units"
    for u in gpuflockd.service gpuflock-worker@.service; do
        sed "s|^ExecStart=/usr/bin/|ExecStart=$D/usr/bin/|" "$D/usr/lib/systemd/system/$u" >"$T/units/$u"
    done
    cp "$T/units/gpuflock-worker@.service" "$T/units/gpuflock-worker@0.service"
    out=$(MANPATH=$D/usr/share/man systemd-analyze verify "$T/units/gpuflockd.service" \
        "$T/units/gpuflock-worker@0.service" 2>&1) || fail "systemd-analyze verify: $out"
    [ -z "$out" ] || fail "systemd-analyze verify says: $out"
    echo "systemd-analyze verify: the units are good (programs and man pages from DESTDIR)"
else
    echo "skip: systemd-analyze verify of the units: systemd-analyze is not installed"
fi

# --- 4. The .deb.
if command -v dpkg-deb >/dev/null; then
    # The maintainer is the last commit's author; where git cannot say (no
    # .git, another user's checkout), one for the test.
    git -C "$REPO" log -1 --format=%an >/dev/null 2>&1 || export DEB_MAINTAINER="gpuflock tests <tests@example.org>"
    mk deb DEB_DIR="$T/deb" >"$T/deb.log" 2>&1 || { tail -20 "$T/deb.log"; fail "make deb failed"; }
    deb=$(ls "$T"/deb/gpuflock_*.deb 2>/dev/null)
    version=$("$GF" version | sed -n 's/^gpuflock \([^ ,]*\).*/\1/p')
    case $deb in */gpuflock_${version}_$(dpkg --print-architecture).deb) ;; *) fail "the package is '$deb' (version $version)" ;; esac
fi
if [ -n "${deb:-}" ] && [ -f "$deb" ]; then
    dpkg-deb -x "$deb" "$T/x"
    dpkg-deb -e "$deb" "$T/x/DEBIAN"
    extra=$(LC_ALL=C sort <<EOF
644 usr/share/doc/gpuflock/changelog.gz
644 usr/share/doc/gpuflock/copyright
644 usr/share/lintian/overrides/gpuflock
EOF
)
    # the library is make install's alone (its packages of their own are not made yet)
    want=$(printf '%s\n%s\n' "$(echo "$expected" | grep -v 'gpuflock\.h\|gpuflock\.pc\|libgpuflock\|gpuflock_spank')" "$extra" \
        | LC_ALL=C sort)
    got=$(tree_of "$T/x")
    if [ "$got" != "$want" ]; then
        fail "the .deb holds other files than make install (< install + the package's own, > .deb):"
        diff <(echo "$want") <(echo "$got") | grep '^[<>]'
    fi
    while read -r mode path; do
        case $path in usr/lib/gpuflock/*)
            strip -o "$T/stripped" "$D/$path" && cmp -s "$T/stripped" "$T/x/$path" ||
                fail "$path in the .deb is not the installed program stripped" ;;
        *) cmp -s "$D/$path" "$T/x/$path" || fail "$path differs between make install and the .deb" ;;
        esac
    done < <(echo "$expected" | grep -E '^[0-9]+ ' | grep -v 'gpuflock\.h\|gpuflock\.pc\|libgpuflock\|gpuflock_spank')
    ctl=$T/x/DEBIAN/control
    grep -qx 'Package: gpuflock' "$ctl" && grep -qx "Version: $version" "$ctl" &&
        grep -qx "Architecture: $(dpkg --print-architecture)" "$ctl" || fail "control: $(cat "$ctl")"
    grep -q '^Depends: .*libc6' "$ctl" || fail "control has no Depends on the C library: $(grep ^Depends "$ctl")"
    [ "$(cat "$T/x/DEBIAN/conffiles")" = /etc/gpuflock/gpuflock.yaml ] || fail "conffiles: $(cat "$T/x/DEBIAN/conffiles")"
    grep -nE 'systemctl .*(start|enable|restart)|deb-systemd-invoke' "$T/x/DEBIAN/postinst" "$T/x/DEBIAN/postrm" &&
        fail "a maintainer script starts or enables a unit"
    dpkg-deb -c "$deb" | awk '$2 != "root/root" { bad = 1; print } END { exit bad }' >/dev/null ||
        fail "the .deb holds files not root's"
    echo ".deb: $(basename "$deb") holds what make install puts (programs stripped), $(grep ^Depends "$ctl")"

    if command -v lintian >/dev/null; then
        lintian --tag-display-limit 0 "$deb" >"$T/lintian.log" 2>&1
        if grep '^E: ' "$T/lintian.log"; then
            fail "lintian finds errors"
        else
            echo "lintian: no errors ($(grep -c '^W: ' "$T/lintian.log") warnings)"
        fi
    else
        echo "skip: lintian of the .deb: lintian is not installed (Debian package lintian)"
    fi

    # dpkg --root into a scratch root: the scripts run outside it, with
    # DPKG_ROOT set (the postinst makes that root's lock files).
    R=$T/dpkgroot
    mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers"
    touch "$R/var/lib/dpkg/status" "$R/var/lib/dpkg/available"
    force=--force-depends,script-chrootless
    [ "$(id -u)" = 0 ] || force=$force,not-root
    if dpkg --root="$R" --log=/dev/null "$force" -i "$deb" >"$T/dpkg.log" 2>&1; then
        got=$(tree_of "$R")
        [ "$got" = "$want" ] || { fail "dpkg --root installed other files than the .deb holds:"; diff <(echo "$want") <(echo "$got") | grep '^[<>]'; }
        if command -v systemd-tmpfiles >/dev/null; then
            [ "$(stat -c %a "$R/run/lock/gpuflock" 2>/dev/null)" = 755 ] &&
                [ "$(stat -c %a "$R/run/lock/gpuflock/gpu0.lock" 2>/dev/null)" = 644 ] &&
                [ -f "$R/run/lock/gpuflock/gpu0.lock.gate" ] ||
                fail "the postinst did not make the lock folder and files in the scratch root"
        else
            echo "skip: the postinst's lock files: systemd-tmpfiles is not installed"
        fi
        dpkg --root="$R" --log=/dev/null "$force" -r gpuflock >>"$T/dpkg.log" 2>&1 || fail "dpkg -r failed"
        left=$(cd "$R" && find . -path ./var -prune -o -path ./run -prune -o \( -type f -o -type l \) -printf '%P\n')
        [ "$left" = etc/gpuflock/gpuflock.yaml ] || fail "dpkg -r left: $left"
        dpkg --root="$R" --log=/dev/null "$force" -P gpuflock >>"$T/dpkg.log" 2>&1 || fail "dpkg -P failed"
        left=$(cd "$R" && find . -path ./var -prune -o -path ./run -prune -o \( -type f -o -type l \) -printf '%P\n')
        [ -z "$left" ] || fail "dpkg -P left: $left"
        echo "dpkg --root: installed (lock files made), removed (configuration kept), purged"
    else
        echo "skip: dpkg --root install of the .deb: dpkg refused here: $(tail -1 "$T/dpkg.log")"
    fi
elif ! command -v dpkg-deb >/dev/null; then
    echo "skip: make deb: dpkg-deb is not installed"
fi

# --- 5. Install again over an edited configuration, then uninstall.
echo "# the operator's" >>"$D/etc/gpuflock/gpuflock.yaml"
cp "$D/etc/gpuflock/gpuflock.yaml" "$T/mine.yaml"
touch "$D/usr/share/gpuflock/evidence/records/stale.json"
mk install DESTDIR="$D" PREFIX=/usr >"$T/install2.log" 2>&1 || { cat "$T/install2.log"; fail "make install (again) failed"; }
cmp -s "$T/mine.yaml" "$D/etc/gpuflock/gpuflock.yaml" || fail "make install replaced the edited configuration"
cmp -s config/gpuflock.example.yaml "$D/etc/gpuflock/gpuflock.yaml.example" || fail "no gpuflock.yaml.example beside it"
grep -q "gpuflock.yaml exists and is left as it is" "$T/install2.log" || fail "make install did not say it kept the configuration"
[ -e "$D/usr/share/gpuflock/evidence/records/stale.json" ] && fail "a second install left a stale evidence record"
mk uninstall DESTDIR="$D" PREFIX=/usr >"$T/uninstall.log" 2>&1 || { cat "$T/uninstall.log"; fail "make uninstall failed"; }
left=$(cd "$D" && find . \( -type f -o -type l \) -printf '%P\n')
[ "$left" = etc/gpuflock/gpuflock.yaml ] || fail "make uninstall left: $(echo $left)"
grep -q "your configuration: left as it is" "$T/uninstall.log" || fail "make uninstall did not say it kept the configuration"
echo "a second install kept the edited configuration; make uninstall left only it"

if [ $failed -gt 0 ]; then
    echo "$failed install checks failed"
    exit 1
fi
echo "install: make install, the installed programs, the units, the .deb and make uninstall agree"
