#!/usr/bin/python3
"""Per-format decode speed, ringfeed against Pillow, on the same files, in one run.

The same photos (the JPEGs of a `ringfeed gen` ImageFolder, decoded once)
are written by Pillow as JPEG, PNG, WebP (lossy and lossless), TIFF (raw
and LZW), BMP and PPM/PGM. Each format is then decoded whole to RGB, one
file at a time on one core, by

  ringfeed  ringfeed.decode(bytes)                       (uint8 HWC tensor)
  Pillow    Image.open(BytesIO(bytes)).convert("RGB")   (+ np.asarray)

alternating in interleaved rounds so drift hits both alike. Reports the
median images/s per core of each and the ratio, and checks that both gave
the same pixels for every file.

  /usr/bin/python3 perf/compare/compare_formats.py --source DIR/train [--count 200]
      [--rounds 5] [--python-path build/release/python]

Needs Debian's python3-pil and python3-numpy, and the ringfeed module
(--python-path, else $PYTHONPATH, else build/release/python or
build/default/python of this checkout).
"""
import argparse
import io
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

FORMATS = [
    ("JPEG q90", "JPEG", {"quality": 90}, "RGB"),
    ("PNG", "PNG", {}, "RGB"),
    ("WebP lossy q80", "WEBP", {"quality": 80}, "RGB"),
    ("WebP lossless", "WEBP", {"lossless": True}, "RGB"),
    ("TIFF raw", "TIFF", {}, "RGB"),
    ("TIFF LZW", "TIFF", {"compression": "tiff_lzw"}, "RGB"),
    ("BMP 24-bit", "BMP", {}, "RGB"),
    ("PPM", "PPM", {}, "RGB"),
    ("PGM", "PPM", {}, "L"),
]


def module_path(arg):
    if arg:
        return arg
    if os.environ.get("PYTHONPATH"):
        return None
    for sub in ("build/release/python", "build/default/python"):
        p = os.path.join(REPO, sub)
        if os.path.isdir(p):
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="an ImageFolder of JPEGs (e.g. `ringfeed gen DIR`/train)")
    ap.add_argument("--count", type=int, default=200, help="photos per format")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--python-path", help="directory holding the ringfeed package")
    args = ap.parse_args()
    path = module_path(args.python_path)
    if path:
        sys.path.insert(0, path)
    import numpy as np
    from PIL import Image

    import ringfeed

    files = []
    for root, _, names in sorted(os.walk(args.source)):
        files += [os.path.join(root, n) for n in sorted(names) if n.lower().endswith((".jpg", ".jpeg"))]
    files = files[: args.count]
    if not files:
        sys.exit(f"compare_formats: no JPEG under {args.source}")
    photos = [Image.open(f).convert("RGB") for f in files]

    encoded = {}
    for label, fmt, opts, mode in FORMATS:
        out = []
        for im in photos:
            b = io.BytesIO()
            (im if mode == "RGB" else im.convert(mode)).save(b, fmt, **opts)
            out.append(b.getvalue())
        encoded[label] = out

    def run_ringfeed(blobs):
        t0 = time.perf_counter()
        for b in blobs:
            ringfeed.decode(b)
        return len(blobs) / (time.perf_counter() - t0)

    def run_pillow(blobs):
        t0 = time.perf_counter()
        for b in blobs:
            np.asarray(Image.open(io.BytesIO(b)).convert("RGB"))
        return len(blobs) / (time.perf_counter() - t0)

    results = {}
    for label, *_ in FORMATS:
        blobs = encoded[label]
        same = True
        try:
            for b in blobs:
                ours = ringfeed.decode(b).numpy()
                theirs = np.asarray(Image.open(io.BytesIO(b)).convert("RGB"))
                same = same and ours.shape == theirs.shape and np.array_equal(ours, theirs)
        except Exception as e:  # a format this build cannot decode
            results[label] = (None, None, f"ringfeed: {e}")
            continue
        rf, pil = [], []
        for r in range(args.rounds):
            order = (run_ringfeed, run_pillow) if r % 2 == 0 else (run_pillow, run_ringfeed)
            for fn in order:
                (rf if fn is run_ringfeed else pil).append(fn(blobs))
        results[label] = (statistics.median(rf), statistics.median(pil), "identical" if same else "PIXELS DIFFER")

    size = f"{photos[0].width}x{photos[0].height}" if len({p.size for p in photos}) == 1 else "mixed sizes"
    print(f"{len(files)} photos ({size}) from {args.source}, one core, median of {args.rounds} interleaved rounds")
    print(f"ringfeed module: {ringfeed.__file__}")
    print(f"{'format':18} {'ringfeed img/s':>15} {'Pillow img/s':>13} {'ratio':>7}  pixels")
    for label, *_ in FORMATS:
        rf, pil, note = results[label]
        if rf is None:
            print(f"{label:18} {'-':>15} {'-':>13} {'-':>7}  {note}")
        else:
            print(f"{label:18} {rf:15.0f} {pil:13.0f} {rf / pil:6.2f}x  {note}")


if __name__ == "__main__":
    main()
