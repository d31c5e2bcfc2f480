#!/bin/bash
# api_python.sh — the library (docs/api.md) as its users meet it:
#  1. $BUILD/lib/libgpuflock.so.0: its soname, and its exported symbols are
#     exactly the functions api/gpuflock.h declares and api/libgpuflock.map
#     lists (nm -D --defined-only); the header compiles alone, as C11 and C++;
#  2. the three-line Python example (python/gpuflock) with /usr/bin/python3
#     against $BUILD/lib, weight-free mode (an empty models folder): its RTTM
#     is `gpuflock diarize --local`'s byte for byte, from a path and from a
#     waveform (a list; a numpy array when numpy is there); iteration, labels,
#     len; a knob, the exclusive RTTM and the speaker embeddings against
#     --exclusive and --speaker-embeddings; the library found beside the
#     package; errors as Python's;
#  3. the same in neural mode with random-weight models (tests/ref/gpu_models.py,
#     needs torch) and the community-1 PLDA on a 12 s file, with and without
#     the knobs (threshold, Fa, Fb, exclude-overlap), and the card:
#     device="cuda:0" against `--gpu 0` where there is one, else EDEVICE for
#     "cuda:0" and the CPU for "auto" (each part says "skip: ..." when it
#     cannot run);
#  4. `make install-lib` into a scratch DESTDIR and into a PREFIX; the C
#     example of docs/api.md compiled against each with pkg-config, run: its
#     RTTM is the command's.
set -u
BUILD=${BUILD:-build}
G="$BUILD/bin/gpuflock"
LIB="$BUILD/lib/libgpuflock.so.0"
A=../shared/data/audio
P=../shared/data/community-1/plda
PY=/usr/bin/python3
[ -f "$A/sample.wav" ] || { echo "skip: no $A/sample.wav"; exit 77; }
[ -x "$PY" ] || { echo "skip: no $PY"; exit 77; }
[ -f "$LIB" ] || { echo "FAIL: $LIB is not built (make lib)"; exit 1; }
T=$(mktemp -d --suffix=.gf_api_it)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export GPUFLOCK_LIB="$PWD/$LIB" PYTHONPATH="$PWD/python"

# 1. the shared library's face
readelf -d "$LIB" | grep -q 'SONAME.*\[libgpuflock\.so\.0\]' || fail "soname is not libgpuflock.so.0"
[ "$(readlink "$BUILD/lib/libgpuflock.so")" = libgpuflock.so.0 ] || fail "no libgpuflock.so link"
nm -D --defined-only "$LIB" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort >"$T/exported"
nm -D --defined-only "$LIB" | awk '$2 != "T" && $2 != "A" { print }' >"$T/other"
[ -s "$T/other" ] && fail "the library exports data or other symbols: $(head -3 "$T/other")"
# every function the header declares: "type gf_diarize_x(" at a line's start, one to a line
grep -oE '^[a-z][a-z_ *]*[ *]gf_diarize_[a-z_]+\(' api/gpuflock.h | grep -oE 'gf_diarize_[a-z_]+' \
    | sort >"$T/declared"
grep -oE '^ *gf_diarize_[a-z_]+;' api/libgpuflock.map | tr -d ' ;' | sort >"$T/mapped"
[ "$(wc -l <"$T/declared")" -ge 20 ] || fail "too few declarations found in api/gpuflock.h"
diff "$T/declared" "$T/exported" || fail "exported symbols differ from api/gpuflock.h's functions"
diff "$T/declared" "$T/mapped" || fail "api/libgpuflock.map differs from api/gpuflock.h"
nm -D --defined-only "$LIB" | grep -q ' gf_diar_run' && fail "internal names exported"
printf '#include "gpuflock.h"\nint main(void) { return GF_DIARIZE_ABI; }\n' >"$T/alone.c"
cc -std=c11 -Wall -Wextra -Werror -pedantic -Iapi -c "$T/alone.c" -o "$T/alone.o" \
    || fail "api/gpuflock.h does not compile alone as C11"
if command -v c++ >/dev/null; then
    c++ -std=c++11 -Wall -Wextra -Werror -pedantic -Iapi -x c++ -c "$T/alone.c" -o "$T/alone++.o" \
        || fail "api/gpuflock.h does not compile as C++"
    nm "$T/alone++.o" >/dev/null || fail "C++ object"
else
    echo "skip: part 1 (the header as C++): no c++ compiler"
fi
echo "ok: soname, $(wc -l <"$T/exported") exported functions = the header's = the map's; header alone in C11 and C++"

# 2. the Python example, weight-free
mkdir "$T/empty"
"$G" diarize --local --models "$T/empty" --out "$T/cli" "$A/sample.wav" >/dev/null 2>"$T/cli.err" \
    || { cat "$T/cli.err"; fail "gpuflock diarize --local (weight-free)"; }
cp "$A/sample.wav" "$T/meeting.wav"
"$G" diarize --local --models "$T/empty" --out "$T/cli" "$T/meeting.wav" >/dev/null 2>&1 \
    || fail "gpuflock diarize --local meeting.wav"
( cd "$T" && "$PY" - "$T/empty" <<'EOF' ) 2>"$T/py.err" || { cat "$T/py.err"; fail "the Python example"; }
import sys
from gpuflock import Pipeline
p = Pipeline(models=sys.argv[1])
d = p("meeting.wav")
with open("py.rttm", "w") as f:
    d.write_rttm(f)
EOF
cmp "$T/py.rttm" "$T/cli/meeting.rttm" || fail "Python's RTTM differs from the command's"
grep -q "weight-free mode: no network files in $T/empty" "$T/py.err" || fail "no weight-free warning"
"$PY" - "$A/sample.wav" "$T/empty" "$T/cli/sample.rttm" "$T" <<'EOF' || fail "Python checks"
import array, os, shutil, subprocess, sys, wave, warnings
warnings.simplefilter("ignore", RuntimeWarning)
import gpuflock
from gpuflock import Pipeline
audio, models, want_path, tmp = sys.argv[1:]
want = open(want_path).read()
p = Pipeline(models=models)
assert p.mode == "weight-free" and p.device == "cpu", (p.mode, p.device)
d = p(audio)
assert d.to_rttm() == want
# iteration as pyannote's: (turn, speaker), and the RTTM's lines
lines = [l.split() for l in want.splitlines()]
tracks = list(d.itertracks())
assert len(d) == len(tracks) == len(lines) > 0
for (turn, spk), l in zip(tracks, lines):
    assert l[7] == spk and f"{turn.start:.6f}" == l[3] and f"{turn.end - turn.start:.6f}" == l[4]
assert list(d) == tracks and [t for t, _, _ in d.itertracks(yield_label=True)] == [t for t, _ in tracks]
assert d.labels() == sorted({l[7] for l in lines}) and d.speaker_diarization is d
assert d.uri == "sample" and abs(d.duration - 30.0) < 0.01 and d.mode == "weight-free"
# a waveform: the file's samples, as a list (no numpy), then as a numpy array
w = wave.open(audio)
assert w.getsampwidth() == 2 and w.getnchannels() == 1
raw = array.array("h", w.readframes(w.getnframes()))
samples = [s / 32768.0 for s in raw]
d2 = p({"waveform": samples, "sample_rate": w.getframerate(), "uri": "sample"})
assert d2.to_rttm() == want, "a waveform list gives another RTTM"
assert p({"waveform": samples, "sample_rate": 16000}).uri == "waveform"
try:
    import numpy as np
except ImportError:
    print("skip: part 2 (a numpy waveform): no numpy for /usr/bin/python3")
else:
    x = np.array(samples, dtype=np.float32)[None, :]
    assert p({"waveform": x, "sample_rate": 16000}, uri="sample").to_rttm() == want
    try:
        p({"waveform": np.zeros((2, 16000), np.float32), "sample_rate": 16000})
        raise SystemExit("stereo taken")
    except ValueError as e:
        assert "average the channels" in str(e)
# constraints per call, and errors as Python's
assert len(p(audio, num_speakers=2).labels()) == 2
try:
    p(os.path.join(tmp, "missing.wav"))
    raise SystemExit("missing file taken")
except FileNotFoundError as e:
    assert "missing.wav" in str(e)
try:
    p({"waveform": samples, "sample_rate": 100})
    raise SystemExit("100 Hz taken")
except gpuflock.Error as e:
    assert e.code == -1 and "sample rate 100 Hz" in str(e), e
try:
    Pipeline(models=models, min_speakers=3, max_speakers=2)
    raise SystemExit("min > max taken")
except gpuflock.Error as e:
    assert "min_speakers 3 is above max_speakers 2" in str(e)
# the library beside the package, without $GPUFLOCK_LIB
pkg = os.path.join(tmp, "site", "gpuflock")
shutil.copytree(os.path.dirname(gpuflock.__file__), pkg,
                ignore=shutil.ignore_patterns("__pycache__"))
shutil.copy(gpuflock.library_path, pkg)
env = {k: v for k, v in os.environ.items() if k not in ("GPUFLOCK_LIB", "PYTHONPATH")}
env["PYTHONPATH"] = os.path.join(tmp, "site")
out = subprocess.run([sys.executable, "-c", "import gpuflock; print(gpuflock.library_path)"],
                     env=env, capture_output=True, text=True, check=True).stdout.strip()
assert out == os.path.join(pkg, "libgpuflock.so.0"), out
print("python: ok")
EOF
"$G" diarize --local --models "$T/empty" --out "$T/knobs" --exclusive --speaker-embeddings \
    --min-duration-off 0.5 "$A/sample.wav" >/dev/null 2>&1 || fail "diarize --exclusive --speaker-embeddings"
"$PY" - "$A/sample.wav" "$T/empty" "$T/knobs" <<'EOF' || fail "the knobs, exclusive turns and embeddings"
import sys, warnings
warnings.simplefilter("ignore", RuntimeWarning)
from gpuflock import Pipeline
audio, models, out = sys.argv[1:]
d = Pipeline(models=models, min_duration_off=0.5)(audio)
assert d.to_rttm() == open(out + "/sample.rttm").read(), "min_duration_off"
ex = d.exclusive_speaker_diarization
assert ex.to_rttm() == open(out + "/sample.exclusive.rttm").read(), "exclusive RTTM"
assert len(ex) > 0 and ex.labels() == d.labels()
try:
    import numpy as np
except ImportError:
    print("skip: part 2 (speaker embeddings against NAME.speakers.npy): no numpy")
else:
    want = np.load(out + "/sample.speakers.npy")
    got = d.speaker_embeddings
    assert got.dtype == np.float32 and got.shape == want.shape == (len(d.labels()), 40), got.shape
    assert (got == want).all(), "speaker embeddings differ"
print("knobs: ok")
EOF
echo "ok: the Python example's RTTM is the command's (path, waveform list and array; min_duration_off, the exclusive RTTM, the speaker embeddings); iteration, errors, the library beside the package"

# 3. neural mode on random weights, and the card
why=""
"$PY" -c 'import torch, numpy' 2>/dev/null || why="$PY cannot import torch and numpy (tests/ref/gpu_models.py writes the models)"
[ -d "$P" ] || why="${why:+$why; }no PLDA at $P"
if [ -n "$why" ]; then
    echo "skip: part 3 (neural mode and the card through the library): $why"
else
    "$PY" tests/ref/gpu_models.py "$T/models" 3 >/dev/null || fail "gpu_models.py"
    cp -r "$P" "$T/models/plda"
    "$PY" -c "
import wave
r = wave.open('$A/sample.wav'); w = wave.open('$T/short.wav', 'w')
w.setparams(r.getparams()); r.readframes(5 * 16000); w.writeframes(r.readframes(12 * 16000))"
    "$G" diarize --local --models "$T/models" --out "$T/nn" "$T/short.wav" >/dev/null 2>"$T/nn.err" \
        || { cat "$T/nn.err"; fail "neural run"; }
    "$G" diarize --local --models "$T/models" --out "$T/nk" --exclusive --speaker-embeddings \
        --clustering-threshold 0.5 --Fa 0.1 --Fb 0.9 --no-embedding-exclude-overlap \
        "$T/short.wav" >/dev/null 2>"$T/nk.err" || { cat "$T/nk.err"; fail "neural run, knobs"; }
    "$PY" - "$T/models" "$T/short.wav" "$T/nn/short.rttm" "$T/nk" <<'EOF' || fail "neural mode through Python"
import sys
import numpy as np
from gpuflock import Pipeline
models, audio, want, knobs = sys.argv[1:]
p = Pipeline(models=models)
assert p.mode == "neural", p.mode
d = p(audio)
assert d.mode == "neural" and d.to_rttm() == open(want).read(), "neural RTTM differs"
k = Pipeline(models=models, clustering_threshold=0.5, Fa=0.1, Fb=0.9,
             embedding_exclude_overlap=False)(audio)
assert k.to_rttm() == open(knobs + "/short.rttm").read(), "neural RTTM with the knobs differs"
assert (k.exclusive_speaker_diarization.to_rttm()
        == open(knobs + "/short.exclusive.rttm").read()), "exclusive RTTM differs"
e, want_e = k.speaker_embeddings, np.load(knobs + "/short.speakers.npy")
assert e.shape == want_e.shape and e.shape[1] == 256 and (e == want_e).all(), "embeddings differ"
print("neural: ok")
EOF
    echo "ok: neural mode: Python's RTTM is the command's (defaults; the knobs, exclusive turns and speaker embeddings)"
    if [ -e /dev/nvidia0 ]; then
        "$G" diarize --local --gpu 0 --models "$T/models" --out "$T/gpu" "$T/short.wav" \
            >/dev/null 2>"$T/gpu.err" || { cat "$T/gpu.err"; fail "--gpu 0"; }
        "$PY" - "$T/models" "$T/short.wav" "$T/gpu/short.rttm" <<'EOF' || fail "the card through Python"
import sys
from gpuflock import Pipeline
models, audio, want = sys.argv[1:]
p = Pipeline(models=models, device="cuda:0")
assert p.device == "cuda:0", p.device
assert p(audio).to_rttm() == open(want).read(), "card RTTM differs from --gpu 0's"
print("card: ok")
EOF
        echo "ok: device=\"cuda:0\" gives --gpu 0's RTTM"
    else
        "$PY" - "$T/models" "$T/short.wav" "$T/nn/short.rttm" <<'EOF' || fail "no card through Python"
import sys
import gpuflock
from gpuflock import Pipeline
models, audio, want = sys.argv[1:]
try:
    Pipeline(models=models, device="cuda:0")
    raise SystemExit("cuda:0 opened without a card")
except gpuflock.Error as e:
    assert e.code == -11 and "CUDA card 0 cannot be used" in str(e), e
p = Pipeline(models=models, device="auto")
assert p.device == "cpu" and p(audio).to_rttm() == open(want).read()
print("no card: ok")
EOF
        echo "ok: without a card, device=\"cuda:0\" fails (EDEVICE) and \"auto\" runs on the CPU"
        echo "skip: part 3 (device=\"cuda:0\" against --gpu 0): no CUDA card (/dev/nvidia0)"
    fi
fi

# 4. installed: a scratch DESTDIR, and a PREFIX; the C example of docs/api.md
awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on' docs/api.md >"$T/example.c"
grep -q 'gf_diarize_open' "$T/example.c" || fail "no C example in docs/api.md"
make -s BUILD="$BUILD" install-lib DESTDIR="$T/dest" >"$T/install.out" 2>&1 \
    || { cat "$T/install.out"; fail "make install-lib DESTDIR=..."; }
D="$T/dest/usr/local"
for f in lib/libgpuflock.so.0 lib/libgpuflock.so include/gpuflock.h lib/pkgconfig/gpuflock.pc; do
    [ -e "$D/$f" ] || fail "install-lib: no $D/$f"
done
grep -qx 'prefix=/usr/local' "$D/lib/pkgconfig/gpuflock.pc" || fail ".pc prefix with DESTDIR"
# the staged tree, as a package build sees it: its .pc under a sysroot
flags=$(PKG_CONFIG_SYSROOT_DIR="$T/dest" PKG_CONFIG_PATH="$D/lib/pkgconfig" \
        pkg-config --cflags --libs gpuflock) || fail "pkg-config on the DESTDIR"
cc -std=c11 -Wall -Wextra -Werror "$T/example.c" $flags -o "$T/example" \
    || fail "the C example against the DESTDIR ($flags)"
LD_LIBRARY_PATH="$D/lib" ldd "$T/example" | grep -q "$D/lib/libgpuflock.so.0" \
    || fail "the example does not load the installed library"
LD_LIBRARY_PATH="$D/lib" "$T/example" "$T/empty" "$A/sample.wav" >"$T/c.rttm" 2>"$T/c.err" \
    || { cat "$T/c.err"; fail "the C example"; }
cmp "$T/c.rttm" "$T/cli/sample.rttm" || fail "the C example's RTTM differs from the command's"
grep -q "weight-free mode" "$T/c.err" || fail "the C example's summary"
# a PREFIX of its own (then the tree's .pc back to the default)
make -s BUILD="$BUILD" install-lib PREFIX="$T/prefix" >"$T/install2.out" 2>&1 \
    || { cat "$T/install2.out"; fail "make install-lib PREFIX=..."; }
make -s BUILD="$BUILD" lib >/dev/null 2>&1
grep -qx "prefix=$T/prefix" "$T/prefix/lib/pkgconfig/gpuflock.pc" || fail ".pc prefix"
flags=$(PKG_CONFIG_PATH="$T/prefix/lib/pkgconfig" pkg-config --cflags --libs gpuflock) \
    || fail "pkg-config on the PREFIX"
cc -std=c11 "$T/example.c" $flags -Wl,-rpath,"$T/prefix/lib" -o "$T/example2" \
    || fail "the C example against the PREFIX"
"$T/example2" "$T/empty" "$A/sample.wav" 2>/dev/null | cmp - "$T/cli/sample.rttm" \
    || fail "the C example (PREFIX) differs"
echo "ok: install-lib into a DESTDIR and a PREFIX; the C example of docs/api.md built with pkg-config gives the command's RTTM"
