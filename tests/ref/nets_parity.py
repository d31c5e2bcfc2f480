"""nets_parity — gpuflock's CPU networks against the PyTorch reference.

Writes random-but-sensible weights in our safetensors format, random speech-
like audio, its fbank and activity masks; runs build/tests/helpers/nets_run
and tests/ref/gfnets.py on the same inputs; checks segmentation
log-probabilities within 1e-4 (max abs) and embeddings with cosine similarity
above 0.9999. Also prints both against a float64 PyTorch run, to show which
side the remaining difference is on. Exit 0 pass, 1 fail.

  /usr/bin/python3 tests/ref/nets_parity.py BUILD_DIR WORK_DIR [WINDOWS]
"""
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gfnets  # noqa: E402

THREADS = (1, 2)   # the helper's thread count: BLAS and the networks' own pool


def main():
    build, work = sys.argv[1], sys.argv[2]
    B = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    S = 3
    helper = os.path.join(build, "tests", "helpers", "nets_run")
    torch.set_num_threads(1)
    ok = True
    S = 3

    seg_path = os.path.join(work, "segmentation.safetensors")
    emb_path = os.path.join(work, "embedding.safetensors")
    seg_sd = gfnets.seg_random_weights(11)
    emb_sd = gfnets.emb_random_weights(12)
    gfnets.write_safetensors(seg_path, seg_sd)
    gfnets.write_safetensors(emb_path, emb_sd)

    wave = gfnets.random_audio(B, 13)
    wave_f = os.path.join(work, "wave.f32")
    wave.tofile(wave_f)
    # the reference reads the file back the way any user would
    sd = gfnets.read_safetensors(seg_path)
    ref = gfnets.Segmentation(sd)(torch.from_numpy(wave)).numpy()
    ref64 = gfnets.Segmentation(sd, torch.float64)(torch.from_numpy(wave).double()).numpy()
    for threads in THREADS:
        ok = check_seg(helper, seg_path, wave_f, B, threads, work, ref, ref64) and ok
    fb = np.stack([gfnets.fbank_features(wave[b]) for b in range(B)])
    masks = gfnets.random_masks(B, 14, S)
    fb_f, m_f = os.path.join(work, "fbank.f32"), os.path.join(work, "masks.f32")
    fb.tofile(fb_f)
    masks.tofile(m_f)
    sd = gfnets.read_safetensors(emb_path)
    ref = gfnets.Embedding(sd)(torch.from_numpy(fb), torch.from_numpy(masks)).numpy()
    ref64 = gfnets.Embedding(sd, torch.float64)(torch.from_numpy(fb).double(),
                                                 torch.from_numpy(masks).double()).numpy()
    for threads in THREADS:
        ok = check_emb(helper, emb_path, fb_f, m_f, B, S, threads, work, ref, ref64) and ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def check_seg(helper, seg_path, wave_f, B, threads, work, ref, ref64):
    ok = True
    out_f = os.path.join(work, "seg_out.f32")
    subprocess.run([helper, "seg", seg_path, wave_f, str(B), out_f, str(threads)], check=True)
    ours = np.fromfile(out_f, np.float32).reshape(B, gfnets.SEG_FRAMES, gfnets.SEG_CLASSES)
    print("segmentation, %d thread(s):" % threads)
    d = np.abs(ours - ref).max()
    print("  max |ours - torch f32| = %.3g, |ours - torch f64| = %.3g, "
          "|torch f32 - torch f64| = %.3g" % (d, np.abs(ours - ref64).max(), np.abs(ref - ref64).max()))
    print("  argmax agreement %.5f, logp range [%.2f, %.2f]"
          % ((ours.argmax(-1) == ref.argmax(-1)).mean(), ref.min(), ref.max()))
    if not np.isfinite(ours).all() or d > 1e-4:
        print("FAIL: segmentation log-probabilities differ by %.3g (tolerance 1e-4)" % d)
        i = np.unravel_index(np.abs(ours - ref).argmax(), ours.shape)
        print("  worst at window %d frame %d class %d: ours %.6f torch %.6f" % (i + (ours[i], ref[i])))
        ok = False
    return ok


def check_emb(helper, emb_path, fb_f, m_f, B, S, threads, work, ref, ref64):
    ok = True
    eo_f = os.path.join(work, "emb_out.f32")
    subprocess.run([helper, "emb", emb_path, fb_f, str(B), m_f, str(S), eo_f, str(threads)], check=True)
    ours = np.fromfile(eo_f, np.float32).reshape(B, S, gfnets.EMB_DIM)
    print("embedding, %d thread(s):" % threads)

    def cos(a, b):
        a, b = a.reshape(-1, a.shape[-1]).astype(np.float64), b.reshape(-1, b.shape[-1]).astype(np.float64)
        return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)

    c = cos(ours, ref)
    print("  max 1 - cosine: ours/torch f32 %.3g, ours/torch f64 %.3g, torch f32/f64 %.3g"
          % (1 - c.min(), 1 - cos(ours, ref64).min(), 1 - cos(ref, ref64).min()))
    print("  max |ours - torch f32| = %.3g (values up to %.3g)"
          % (np.abs(ours - ref).max(), np.abs(ref).max()))
    flat = ref.reshape(-1, ref.shape[-1])
    between = [cos(flat[i:i + 1], flat[j:j + 1])[0] for i in range(len(flat)) for j in range(i)]
    # Random weights give embeddings that share a large common component; the
    # centred comparison checks the part that tells speakers apart.
    mo, mr = ours.reshape(-1, 256).mean(0), flat.mean(0)
    cc = cos(ours.reshape(-1, 256) - mo, flat - mr)
    centred = [cos(flat[i:i + 1] - mr, flat[j:j + 1] - mr)[0] for i in range(len(flat)) for j in range(i)]
    print("  cosine between different (window, speaker) pairs: raw %.5f to %.5f, "
          "centred %.3f to %.3f" % (min(between), max(between), min(centred), max(centred)))
    print("  max 1 - cosine of centred embeddings ours/torch f32: %.3g" % (1 - cc.min()))
    if max(centred) > 0.99:
        print("FAIL: the test embeddings barely depend on their input")
        ok = False
    if not np.isfinite(ours).all() or c.min() <= 0.9999 or cc.min() <= 0.9999:
        print("FAIL: embedding cosine similarity %.8f, centred %.8f (needs > 0.9999)"
              % (c.min(), cc.min()))
        ok = False
    return ok


if __name__ == "__main__":
    sys.exit(main())
