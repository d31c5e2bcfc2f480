"""gpuflock: who spoke when, the pyannote community-1 recipe in C.

The package is a thin layer over libgpuflock.so.0, the project's C API
(api/gpuflock.h, docs/api.md), reached through ctypes: nothing is compiled
when it is installed, and numpy is used when it is there, never needed.

    from gpuflock import Pipeline
    p = Pipeline(models="DIR")
    d = p("meeting.wav")
    for turn, speaker in d.itertracks():
        print(f"{turn.start:.3f} {turn.end:.3f} {speaker}")
    with open("meeting.rttm", "w") as f:
        d.write_rttm(f)

The library is looked for, in this order: $GPUFLOCK_LIB (the file, or the
folder holding it), beside this package, the source tree's build/lib (when
the package is used from python/ of a built tree), then the system's
dynamic loader (libgpuflock.so.0 installed with `make install-lib`, then
ldconfig).
"""

import array
import ctypes
import errno
import os
import threading
import warnings
import weakref

__all__ = ["Pipeline", "Diarization", "Segment", "Error", "set_log_level", "library_path"]

_SONAME = "libgpuflock.so.0"

# api/gpuflock.h's codes and constants
_ENOENT = -3
_MODE_WEIGHT_FREE = 1
_CPU, _ANY_CARD = -1, -2
_MATH = {"fp32": 0, "tf32": 1}
_LEVELS = {"debug": 0, "info": 1, "warn": 2, "error": 3, "off": 4}


class Error(RuntimeError):
    """A call of the library failed: .code is its GF_DIARIZE_E* code."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# ---- the library ---------------------------------------------------------


def _candidates():
    env = os.environ.get("GPUFLOCK_LIB")
    if env:  # asked for: that one, or none
        return [os.path.join(env, _SONAME) if os.path.isdir(env) else env]
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.join(here, os.pardir, os.pardir, "build", "lib", _SONAME)
    found = [p for p in (os.path.join(here, _SONAME), os.path.normpath(tree)) if os.path.exists(p)]
    return found + [_SONAME]


def _load():
    tried = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"{path}: {e}")
    raise OSError("gpuflock: libgpuflock.so.0 not found (set GPUFLOCK_LIB, or run "
                  "`make lib` / `make install-lib`); tried " + "; ".join(tried))


class _Opts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("models", ctypes.c_char_p),
                ("num_speakers", ctypes.c_int), ("min_speakers", ctypes.c_int),
                ("max_speakers", ctypes.c_int), ("batch_size", ctypes.c_int),
                ("threads", ctypes.c_int), ("device", ctypes.c_int), ("math", ctypes.c_int),
                ("two_streams", ctypes.c_int), ("clustering_threshold", ctypes.c_double),
                ("fa", ctypes.c_double), ("fb", ctypes.c_double),
                ("min_duration_off", ctypes.c_double),
                ("embedding_include_overlap", ctypes.c_int),
                ("segmentation_step", ctypes.c_double)]


_PROGRESS = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
_CANCEL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class _Call(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("uri", ctypes.c_char_p),
                ("progress", _PROGRESS), ("progress_user", ctypes.c_void_p),
                ("cancel", _CANCEL), ("cancel_user", ctypes.c_void_p),
                ("intermediates", ctypes.c_char_p), ("overwrite", ctypes.c_int),
                ("num_speakers", ctypes.c_int), ("min_speakers", ctypes.c_int),
                ("max_speakers", ctypes.c_int)]


class _Turn(ctypes.Structure):
    _fields_ = [("start", ctypes.c_double), ("end", ctypes.c_double),
                ("speaker", ctypes.c_int)]


_lib, library_path = _load()


def _sig(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_H, _R, _P = ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER
_opts_init = _sig("gf_diarize_opts_init", None, _P(_Opts), ctypes.c_size_t)
_open = _sig("gf_diarize_open", ctypes.c_int, _P(_Opts), _P(_H))
_close = _sig("gf_diarize_close", None, _P(_H))
_errmsg = _sig("gf_diarize_errmsg", ctypes.c_char_p, _H)
_mode = _sig("gf_diarize_mode", ctypes.c_int, _H)
_device = _sig("gf_diarize_device", ctypes.c_int, _H)
_vad = _sig("gf_diarize_vad", ctypes.c_char_p, _H)
_call_init = _sig("gf_diarize_call_init", None, _P(_Call), ctypes.c_size_t)
_file = _sig("gf_diarize_file", ctypes.c_int, _H, ctypes.c_char_p, _P(_Call), _P(_R))
_samples = _sig("gf_diarize_samples", ctypes.c_int, _H, _P(ctypes.c_float), ctypes.c_size_t,
                ctypes.c_int, _P(_Call), _P(_R))
_r_turns = _sig("gf_diarize_result_turns", ctypes.c_size_t, _R, _P(_P(_Turn)))
_r_exclusive = _sig("gf_diarize_result_exclusive", ctypes.c_size_t, _R, _P(_P(_Turn)))
_r_embeddings = _sig("gf_diarize_result_embeddings", _P(ctypes.c_float), _R,
                     _P(ctypes.c_size_t))
_r_speakers = _sig("gf_diarize_result_speakers", ctypes.c_size_t, _R)
_r_label = _sig("gf_diarize_result_label", ctypes.c_char_p, _R, ctypes.c_size_t)
_r_duration = _sig("gf_diarize_result_duration", ctypes.c_double, _R)
_r_mode = _sig("gf_diarize_result_mode", ctypes.c_int, _R)
_r_vad = _sig("gf_diarize_result_vad", ctypes.c_char_p, _R)
_r_elapsed = _sig("gf_diarize_result_elapsed", ctypes.c_double, _R)
_r_uri = _sig("gf_diarize_result_uri", ctypes.c_char_p, _R)
# strings the caller frees: kept as pointers, read, then freed
_r_rttm = _sig("gf_diarize_result_rttm", ctypes.c_void_p, _R, ctypes.c_char_p)
_r_exclusive_rttm = _sig("gf_diarize_result_exclusive_rttm", ctypes.c_void_p, _R,
                         ctypes.c_char_p)
_r_json = _sig("gf_diarize_result_json", ctypes.c_void_p, _R)
_r_destroy = _sig("gf_diarize_result_destroy", None, _P(_R))
_free = _sig("gf_diarize_free", None, ctypes.c_void_p)
_version = _sig("gf_diarize_version", ctypes.c_char_p)
_set_log_level = _sig("gf_diarize_set_log_level", None, ctypes.c_int)

__version__ = _version().decode()


def set_log_level(level):
    """The library's log lines on stderr from `level` up: "debug", "info"
    (the default), "warn", "error" or "off". One setting for the process."""
    _set_log_level(_LEVELS[level])


def _take_string(ptr):
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode()
    finally:
        _free(ptr)


def _bytes(s):
    return None if s is None else os.fsencode(s)


# ---- results -------------------------------------------------------------


class Segment:
    """A stretch of time in seconds, as pyannote.core's Segment."""

    __slots__ = ("start", "end")

    def __init__(self, start, end):
        self.start = start
        self.end = end

    @property
    def duration(self):
        return self.end - self.start

    def __iter__(self):
        return iter((self.start, self.end))

    def __eq__(self, other):
        return isinstance(other, Segment) and (self.start, self.end) == (other.start, other.end)

    def __hash__(self):
        return hash((self.start, self.end))

    def __repr__(self):
        return f"<Segment({self.start:g}, {self.end:g})>"


class Diarization:
    """What one recording gave: its speaker turns, sorted by start.

    Iterating gives (turn, speaker) pairs, as pyannote 4's
    output.speaker_diarization does; itertracks(yield_label=True) gives
    pyannote.core's (turn, track, speaker) triples. exclusive_speaker_diarization
    is the same recording with one speaker at a time, and speaker_embeddings
    each speaker's centroid, as in pyannote 4's output."""

    def __init__(self, result, _whole=None):
        self._r = result
        self._whole = _whole   # the exclusive view keeps the result alive through it
        if _whole is None:
            self._done = weakref.finalize(self, _destroy_result, result)
        p = _P(_Turn)()
        n = (_r_exclusive if _whole else _r_turns)(result, ctypes.byref(p))
        self._labels = [_r_label(result, k).decode() for k in range(_r_speakers(result))]
        self._turns = [(Segment(p[i].start, p[i].end), self._labels[p[i].speaker])
                       for i in range(n)]
        self.uri = _r_uri(result).decode()
        self.duration = _r_duration(result)
        self.mode = "weight-free" if _r_mode(result) == _MODE_WEIGHT_FREE else "neural"
        self.vad = _r_vad(result).decode()
        self.elapsed = _r_elapsed(result)
        self._exclusive = None

    @property
    def speaker_diarization(self):
        """This object (pyannote 4's name for the annotation of an output)."""
        return self

    @property
    def exclusive_speaker_diarization(self):
        """At most one speaker at a time, the most active one (a Diarization)."""
        if self._whole is not None:
            return self
        if self._exclusive is None:
            self._exclusive = Diarization(self._r, _whole=self)
            self._exclusive.uri = self.uri
        return self._exclusive

    @property
    def speaker_embeddings(self):
        """Each speaker's centroid embedding, labels() order: a numpy array
        (speakers x 256; 40 in weight-free mode) when numpy is there, else a
        list of lists."""
        dim = ctypes.c_size_t()
        p = _r_embeddings(self._r, ctypes.byref(dim))
        n, d = (len(self._labels) if p else 0), dim.value
        rows = [[p[k * d + j] for j in range(d)] for k in range(n)]
        try:
            import numpy as np
        except ImportError:
            return rows
        return np.array(rows, dtype=np.float32).reshape(n, d)

    def __iter__(self):
        return iter(self._turns)

    def __len__(self):
        return len(self._turns)

    def itertracks(self, yield_label=False):
        """(turn, speaker) per turn; with yield_label, (turn, track, speaker)
        as pyannote.core's Annotation gives them (track: the turn's index)."""
        for i, (turn, speaker) in enumerate(self._turns):
            yield (turn, i, speaker) if yield_label else (turn, speaker)

    def labels(self):
        """The speakers' labels, sorted: SPEAKER_00, SPEAKER_01, ..."""
        return sorted(self._labels)

    def to_rttm(self):
        """The RTTM text under self.uri: what `gpuflock diarize` writes."""
        fn = _r_exclusive_rttm if self._whole is not None else _r_rttm
        text = _take_string(fn(self._r, _bytes(self.uri)))
        if text is None:
            raise ValueError(f"gpuflock: uri {self.uri!r}: an RTTM needs a non-empty uri")
        return text

    def write_rttm(self, file):
        """Write the RTTM to a file object open for text (as pyannote's
        Annotation.write_rttm) or to a path."""
        text = self.to_rttm()
        if hasattr(file, "write"):
            file.write(text)
        else:
            with open(file, "w") as f:
                f.write(text)

    def to_json(self):
        """`gpuflock diarize --json`'s document: turns, exclusive turns,
        speakers and their embeddings, parameters, mode, timings, devstats,
        and the input file (None for a waveform)."""
        return _take_string(_r_json(self._r))

    def __repr__(self):
        return (f"<Diarization {self.uri!r}: {len(self)} turns, {len(self._labels)} speakers, "
                f"{self.duration:.1f} s, {self.mode}>")


def _destroy_result(r):
    _r_destroy(ctypes.byref(r))


def _close_handle(h):
    _close(ctypes.byref(h))


# ---- the pipeline ----------------------------------------------------------


def _device_index(device):
    if device is None or device == "cpu":
        return _CPU
    if device == "auto":
        return _ANY_CARD
    if isinstance(device, int) and device >= 0:
        return device
    if isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
        return int(device[5:] or 0)
    raise ValueError(f"gpuflock: device {device!r}: 'cpu', 'cuda', 'cuda:N', N or 'auto'")


def _waveform(w):
    """Mono float32 samples as (keep-alive object, pointer, count)."""
    if isinstance(w, (list, tuple)) and len(w) == 1 and isinstance(w[0], (list, tuple)):
        w = w[0]   # one channel of a (channel, time) list
    if isinstance(w, (list, tuple, array.array)):
        buf = array.array("f", w)
        n = len(buf)
        keep = (ctypes.c_float * n).from_buffer(buf) if n else (ctypes.c_float * 1)()
        return (buf, keep), ctypes.cast(keep, _P(ctypes.c_float)), n
    try:
        import numpy as np
    except ImportError:
        raise TypeError("gpuflock: waveform: a sequence of floats (numpy is not installed "
                        f"for other types), not {type(w).__name__}") from None
    a = np.asarray(w, dtype=np.float32)   # numpy arrays, CPU torch tensors, ...
    if a.ndim == 2 and a.shape[0] == 1:
        a = a[0]
    if a.ndim != 1:
        raise ValueError(f"gpuflock: waveform of shape {a.shape}: mono samples, (n,) or "
                         "(1, n), are taken (average the channels first)")
    a = np.ascontiguousarray(a)
    return a, a.ctypes.data_as(_P(ctypes.c_float)), int(a.size)


class Pipeline:
    """A diarization pipeline (one gf_diarize handle).

    models: the models folder (segmentation.safetensors,
    embedding.safetensors, plda/); None, or a folder without the two
    network files, runs weight-free mode (the trained voice activity
    detector set-up fetched, else energy voice activity; filterbank
    statistics: a much higher DER), which self.mode and self.vad say and, when a folder
    was given, a warning too. num_speakers / min_speakers / max_speakers
    constrain the count (also per call); batch_size windows per network
    call; threads for the CPU (0: one per core); device "cpu", "cuda",
    "cuda:N" or N (that card, or the constructor fails), or "auto" (card 0
    when it can be used, else the CPU); math "fp32" or "tf32" and
    two_streams on a card. clustering_threshold, Fa, Fb, min_duration_off
    and embedding_exclude_overlap are the recipe's knobs under pyannote's
    names (None: community-1's 0.6, 0.07, 0.8, 0.0, True).

    One Pipeline is used by one thread at a time (calls from several are
    taken in turn); several Pipelines run side by side."""

    def __init__(self, models=None, *, num_speakers=None, min_speakers=None,
                 max_speakers=None, batch_size=None, threads=None, device="cpu",
                 math="fp32", two_streams=True, clustering_threshold=None, Fa=None, Fb=None,
                 min_duration_off=None, embedding_exclude_overlap=True,
                 segmentation_step=None):
        o = _Opts()
        _opts_init(ctypes.byref(o), ctypes.sizeof(o))
        self._models = None if models is None else os.fspath(models)
        o.models = _bytes(self._models)
        o.num_speakers = num_speakers or 0
        o.min_speakers = min_speakers or 0
        o.max_speakers = max_speakers or 0
        o.batch_size = batch_size or 0
        o.threads = threads or 0
        o.device = _device_index(device)
        if math not in _MATH:
            raise ValueError(f"gpuflock: math {math!r}: 'fp32' or 'tf32'")
        o.math = _MATH[math]
        o.two_streams = 1 if two_streams else 0
        o.clustering_threshold = clustering_threshold or 0.0
        o.fa = Fa or 0.0
        o.fb = Fb or 0.0
        o.min_duration_off = min_duration_off or 0.0
        o.embedding_include_overlap = 0 if embedding_exclude_overlap else 1
        o.segmentation_step = segmentation_step or 0.0
        h = _H()
        rc = _open(ctypes.byref(o), ctypes.byref(h))
        if rc != 0:
            msg = _errmsg(h).decode(errors="replace")
            _close(ctypes.byref(h))
            raise Error(rc, f"gpuflock: {msg}")
        self._h = h
        self._done = weakref.finalize(self, _close_handle, h)
        self._lock = threading.Lock()
        self.mode = "weight-free" if _mode(h) == _MODE_WEIGHT_FREE else "neural"
        self.vad = _vad(h).decode()
        card = _device(h)
        self.device = "cpu" if card < 0 else f"cuda:{card}"
        if self.mode == "weight-free" and self._models is not None:
            what = "trained" if self.vad != "energy" else "energy"
            warnings.warn(f"gpuflock: weight-free mode: no network files in {self._models} "
                          f"({what} voice activity and filterbank statistics; expect a much "
                          "higher DER)", RuntimeWarning, stacklevel=2)

    def __call__(self, file, *, num_speakers=None, min_speakers=None, max_speakers=None,
                 progress=None, uri=None):
        """Diarize a recording: a path, {"audio": path}, or {"waveform":
        samples, "sample_rate": rate} (samples: mono floats, a sequence or
        an array; any rate from 1 kHz to 768 kHz, resampled to 16 kHz as a
        file is). A "uri" key, or uri=, names it in the RTTM. progress, when
        given, is called with (windows done, windows in all) after each
        batch. Returns a Diarization."""
        c = _Call()
        _call_init(ctypes.byref(c), ctypes.sizeof(c))
        c.num_speakers = num_speakers or 0
        c.min_speakers = min_speakers or 0
        c.max_speakers = max_speakers or 0
        if isinstance(file, dict):
            uri = uri if uri is not None else file.get("uri")
        c.uri = _bytes(uri)
        if progress is not None:
            c.progress = _PROGRESS(lambda _user, done, total: progress(done, total))
        r = _R()
        what = file
        with self._lock:
            if isinstance(file, dict) and "waveform" in file:
                keep, ptr, n = _waveform(file["waveform"])
                rate = int(file.get("sample_rate", 0))
                what = "waveform"
                rc = _samples(self._h, ptr, n, rate, ctypes.byref(c), ctypes.byref(r))
                del keep
            else:
                path = file["audio"] if isinstance(file, dict) else file
                what = os.fspath(path)
                rc = _file(self._h, os.fsencode(what), ctypes.byref(c), ctypes.byref(r))
            msg = _errmsg(self._h).decode(errors="replace")
        if rc == _ENOENT:
            raise FileNotFoundError(errno.ENOENT, f"gpuflock: {msg}", what)
        if rc != 0:
            raise Error(rc, f"gpuflock: {msg}")
        return Diarization(r)

    def close(self):
        """Let go of the models, buffers and card now (else when collected)."""
        self._done()
