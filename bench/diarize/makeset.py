"""makeset — N distinct recordings of S seconds from the shared audio, for
bench/diarize/batch: the sources (16 kHz mono WAV, 16-bit or 32-bit float)
are joined into one ring of audio; recording i is that ring rotated to an
offset of its own, with a second rotation of the ring mixed in 12 dB down
(a second conversation in the room), so that no two recordings are the
same while each sounds like the meetings it comes from. 16-bit PCM out,
deterministic: the same arguments give the same bytes.
Usage: makeset.py OUT_DIR N SECONDS SOURCE.wav [SOURCE.wav ...]"""
import os
import struct
import sys

import numpy as np

RATE = 16000


def read_wav(path):
    """Mono float32 samples of a 16 kHz PCM16 or float32 WAV (the first
    channel of several)."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"RIFF" or b[8:12] != b"WAVE":
        raise SystemExit(f"makeset: {path}: not a WAV file")
    pos, fmt, data = 12, None, None
    while pos + 8 <= len(b):
        cid, size = b[pos:pos + 4], struct.unpack("<I", b[pos + 4:pos + 8])[0]
        body = b[pos + 8:pos + 8 + size]
        if cid == b"fmt ":
            fmt = struct.unpack("<HHIIHH", body[:16])
        elif cid == b"data":
            data = body
        pos += 8 + size + (size & 1)
    if fmt is None or data is None:
        raise SystemExit(f"makeset: {path}: no fmt or data chunk")
    tag, ch, rate, _, _, bits = fmt
    if rate != RATE:
        raise SystemExit(f"makeset: {path}: {rate} Hz, not {RATE}")
    if tag == 1 and bits == 16:
        x = np.frombuffer(data[:len(data) // 2 * 2], dtype="<i2").astype(np.float32) / 32768.0
    elif tag == 3 and bits == 32:
        x = np.frombuffer(data[:len(data) // 4 * 4], dtype="<f4").astype(np.float32)
    else:
        raise SystemExit(f"makeset: {path}: format {tag}, {bits} bits: PCM16 or float32 only")
    return x[::ch] if ch > 1 else x


def write_wav(path, x):
    pcm = np.clip(np.round(x * 32767.0), -32768, 32767).astype("<i2").tobytes()
    head = struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + len(pcm), b"WAVE", b"fmt ", 16, 1, 1,
                       RATE, RATE * 2, 2, 16, b"data", len(pcm))
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(head + pcm)
    os.replace(tmp, path)


def main(argv):
    if len(argv) < 5:
        raise SystemExit(__doc__)
    out, n, secs = argv[1], int(argv[2]), float(argv[3])
    ring = np.concatenate([read_wav(p) for p in argv[4:]])
    length = int(secs * RATE)
    os.makedirs(out, exist_ok=True)
    # offsets: a golden-ratio walk over the ring, so that nearby i land far apart
    phi = (5 ** 0.5 - 1) / 2
    for i in range(n):
        a = int(((i * phi) % 1.0) * len(ring))
        b = int(((i * phi * phi + 0.5) % 1.0) * len(ring))
        idx = np.arange(length)
        x = ring[(a + idx) % len(ring)] + 0.25 * ring[(b + idx) % len(ring)]
        write_wav(os.path.join(out, f"r{i:04d}.wav"), 0.8 * x / max(1e-3, float(np.abs(x).max())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
