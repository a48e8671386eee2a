#!/usr/bin/python3
"""Writes the committed WebP test files and their Pillow goldens.

usage: /usr/bin/python3 tests/data/image/make_webp.py [OUTDIR]

OUTDIR (default: tests/data/image/webp/) gets NAME.webp and NAME.webp.ppm
(Image.open(f).convert("RGB"), Pillow's pixels, binary P6) for lossy,
lossless, alpha, grayscale-source and animated files, and manifest.txt
listing the names (see pillow_rgb.py). image_webp_tests compares ringfeed's
decode with the .ppm bit for bit. Deterministic with Debian 12's Pillow 9.4.0
and libwebp 1.2.4. Exits 3 when Pillow lacks WebP.
"""
import os
import sys

import numpy as np
from PIL import Image, features

import pillow_rgb


def pattern(w, h, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    r = (x * 255 // max(w - 1, 1)).astype(np.int32)
    g = (y * 255 // max(h - 1, 1)).astype(np.int32)
    b = ((x + y) * 7 % 256).astype(np.int32)
    rgb = np.stack([r, g, b], axis=-1) + rng.integers(-24, 25, size=(h, w, 3))
    # a few sharp-edged blocks for the lossy coder's ringing
    rgb[h // 4 : h // 2, w // 5 : w // 2] = (250, 20, 60)
    return np.clip(rgb, 0, 255).astype(np.uint8)


def main():
    if not features.check("webp") or not features.check("webp_anim"):
        print("Pillow lacks WebP (or WebP animation) support", file=sys.stderr)
        return 3
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "webp")
    pillow_rgb.clear(out)
    names = []

    def save(name, im, **kw):
        im.save(os.path.join(out, name + ".webp"), "WEBP", **kw)
        pillow_rgb.write_golden(out, name + ".webp")
        names.append(name + ".webp")

    rgb = Image.fromarray(pattern(67, 45, 1), "RGB")
    save("lossy", rgb, quality=80)
    save("lossy_q5", Image.fromarray(pattern(33, 70, 2), "RGB"), quality=5)
    save("lossless", rgb, lossless=True)
    alpha = np.zeros((45, 67), np.uint8)
    alpha[:, :] = np.arange(67, dtype=np.uint8)[None, :] * 3
    alpha[10:20, 10:30] = 0
    rgba = Image.fromarray(np.dstack([pattern(67, 45, 3), alpha]), "RGBA")
    save("rgba_lossy", rgba, quality=75)
    save("rgba_lossless", rgba, lossless=True)
    save("rgba_lossless_exact", rgba, lossless=True, exact=True)
    gray = Image.fromarray(pattern(50, 31, 4)[:, :, 1], "L")
    save("gray_lossy", gray, quality=90)
    save("gray_lossless", gray, lossless=True)
    frames = [Image.fromarray(pattern(40, 30, 10 + i), "RGB") for i in range(3)]
    save("animated", frames[0], save_all=True, append_images=frames[1:], duration=100, loop=0, quality=70)
    aframes = [Image.fromarray(np.dstack([pattern(40, 30, 20 + i), np.full((30, 40), 100 + 50 * i, np.uint8)]), "RGBA")
               for i in range(3)]
    save("animated_rgba_lossless", aframes[0], save_all=True, append_images=aframes[1:], duration=50,
         lossless=True)
    pillow_rgb.write_manifest(out, names, "make_webp.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
