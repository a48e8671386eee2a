#!/usr/bin/python3
"""Goldens for ringfeed's colour and pixel ops (include/ringfeed/image/color.hpp).

    /usr/bin/python3 tests/data/image/make_color_goldens.py            # rewrites color/
    /usr/bin/python3 tests/data/image/make_color_goldens.py --many DIR [SEED] # blur measurement set

Needs Debian 12's python3-pil (Pillow 9.4.0), python3-torchvision (0.14.1,
torch 1.13.1) and python3-numpy. Deterministic: the same packages rewrite
color/ byte for byte.

Sources: crops of the committed decoder goldens (each the Pillow
`convert("RGB")` of a JPEG, PNG, WebP, TIFF, BMP or PNM file; one a grayscale
JPEG), plus tiny (1x1, 2x3, 3x3) and thin (5x1, 1x4, 64x7) crops; a 151x139
and four photo crops serve only some one-channel blurs (see large() and
SLOW_CONV). Each is
used as "RGB" (src_NAME.ppm) and as `convert("L")` of it (src_NAME.pgm).

color/cases.txt, one case a line:  OFFSET LENGTH SRC MODE OP ARGS...
the output of torchvision.transforms.functional.OP(img, *ARGS) on src SRC in
mode MODE (rgb | l), stored as raw HWC bytes at OFFSET in color/goldens.bin;
OFFSET "-" means torchvision raised an error (the C++ op must throw).
color/kernels.txt: `SIZE SIGMA HEX...` torchvision's _get_gaussian_kernel1d
float32 bits. color/hashes.txt: `OP ARG HASH` over the all-colours image
(4096x4096 RGB, pixel p = (p >> 16, p >> 8 & 255, p & 255)), hash =
sum(byte_i * (2i + 1) * 0x9E3779B97F4A7C15) mod 2**64 of the output bytes.
"""
import os
import sys

import numpy as np
import torch
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.transforms.functional_tensor import _get_gaussian_kernel1d

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "color")

SOURCES = [  # name, committed RGB golden, crop box (left, top, right, bottom) or None
    ("jpeg", "decode/s420.jpg.ppm", None),
    ("png", "decode/palette.png.ppm", (5, 3, 36, 26)),
    ("webp", "webp/lossy.webp.ppm", (2, 1, 25, 18)),
    ("tiff", "tiff/rgb_tiff_lzw.tif.ppm", (0, 0, 23, 17)),
    ("bmp", "bmp_pnm/os2_rgb24.bmp.ppm", (1, 1, 24, 18)),
    ("pnm", "bmp_pnm/plain_rgb.ppm.ppm", None),
    ("gray", "decode/gray.jpg.ppm", (10, 6, 50, 36)),
    ("t1x1", "decode/s420.jpg.ppm", (30, 20, 31, 21)),
    ("t2x3", "decode/s420.jpg.ppm", (30, 20, 32, 23)),
    ("t3x3", "decode/s420.jpg.ppm", (7, 9, 10, 12)),
    ("t5x1", "decode/s420.jpg.ppm", (0, 40, 5, 41)),
    ("t1x4", "decode/s420.jpg.ppm", (60, 0, 61, 4)),
    ("t64x7", "decode/s420.jpg.ppm", None),  # made below: the photo resized to 64x7
    ("large", "decode/s420.jpg.ppm", None),  # made below: 151x139, only where large(): see there
]


# One-channel blurs where torch's slow_conv2d (rounded products, then adds)
# and oneDNN's fused multiply-adds round one byte differently: found by
# --many 24 (photo crops; each source is used only for its case, as L).
SLOW_CONV = {
    "slow_rocket_a": ("photos/rocket.jpg", (234, 259, 330, 333), [3, 7, 0.8531418442726135, 0.7679129242897034]),
    "slow_rocket_b": ("photos/rocket.jpg", (58, 207, 127, 289), [1, 9, 0.9201403260231018, 0.731631338596344]),
    "slow_coffee": ("photos/coffee_portrait.jpg", (113, 338, 208, 365), [21, 1, 0.9573981761932373, 0.1295458972454071]),
    "slow_astronaut": ("photos/astronaut.jpg", (126, 410, 186, 456), [1, 9, 0.8128786087036133, 1.9931026697158813]),
}


def large(op, args, mode):
    """The 151x139 source, used only for L blurs with a kernel side <= 3: its
    padded size passes 20480, where torch 1.13 switches such a convolution
    from slow_conv2d to oneDNN (another summation)."""
    return op == "gaussian_blur" and mode == "l" and min(args[0], args[1]) <= 3

ENHANCE = [0.0, 0.5, 1.3, 2.0]
BLUR = [  # (kx, ky), (sx, sy): torchvision's GaussianBlur default sigma range is (0.1, 2.0)
    ((3, 3), (0.1, 0.1)),
    ((3, 3), (2.0, 2.0)),
    ((5, 5), (1.1, 1.1)),  # sigma=None's default for 5: 0.15 * 5 + 0.35
    ((7, 3), (1.5, 0.7)),
    ((1, 5), (0.5, 1.0)),
    ((9, 9), (2.0, 2.0)),
    ((23, 23), (0.1, 2.0)),  # SimCLR: kernel 10% of 224, sigma in (0.1, 2.0)
    ((23, 23), (1.37, 1.37)),
]


def cases():
    for f in ENHANCE:
        yield "adjust_brightness", [f]
        yield "adjust_contrast", [f]
        yield "adjust_saturation", [f]
        yield "adjust_sharpness", [f]
    for f in (-0.5, -0.1, 0.1, 0.5):
        yield "adjust_hue", [f]
    yield "to_grayscale", [1]
    yield "to_grayscale", [3]
    for bits in range(0, 9):
        yield "posterize", [bits]
    for t in (0, 128, 255):
        yield "solarize", [t]
    yield "autocontrast", []
    yield "equalize", []
    yield "invert", []
    for k, s in BLUR:
        yield "gaussian_blur", [k[0], k[1], s[0], s[1]]
    for _, _, args in SLOW_CONV.values():
        yield "gaussian_blur", args


def apply(op, img, args):
    if op == "gaussian_blur":
        return F.gaussian_blur(img, [args[0], args[1]], [args[2], args[3]])
    return getattr(F, op)(img, *args)


def fmt(v):
    return repr(v) if isinstance(v, float) else str(v)


def load_sources(root):
    out = []
    for name, path, box in SOURCES:
        im = Image.open(os.path.join(HERE, path)).convert("RGB")
        if name == "t64x7":
            im = im.resize((64, 7), Image.BILINEAR)
        elif name == "large":
            im = im.resize((151, 139), Image.BICUBIC)
        elif box:
            im = im.crop(box)
        out.append((name, im))
    for name, (path, box, _) in SLOW_CONV.items():
        out.append((name, Image.open(os.path.join(HERE, path)).convert("RGB").crop(box)))
    return out


def wanted(name, mode, op, args):
    if name in SLOW_CONV:
        return op == "gaussian_blur" and mode == "l" and args == SLOW_CONV[name][2]
    return name != "large" or large(op, args, mode)


def write_set(outdir, sources, case_list):
    os.makedirs(outdir, exist_ok=True)
    lines = ["# OFFSET LENGTH SRC MODE OP ARGS: F.OP(img, *ARGS) bytes in goldens.bin; '-' = torchvision raised"]
    blob = bytearray()
    for name, rgb in sources:
        if name != "large" and name not in SLOW_CONV:  # used as L only
            rgb.save(os.path.join(outdir, f"src_{name}.ppm"))
        rgb.convert("L").save(os.path.join(outdir, f"src_{name}.pgm"))
    for op, args in case_list:
        for name, rgb in sources:
            for mode, img in (("rgb", rgb), ("l", rgb.convert("L"))):
                if not wanted(name, mode, op, args):
                    continue
                try:
                    res = np.ascontiguousarray(np.asarray(apply(op, img, args)))
                except (ValueError, RuntimeError):
                    lines.append(" ".join(["-", "0", name, mode, op] + [fmt(a) for a in args]))
                    continue
                data = res.tobytes()
                lines.append(" ".join([str(len(blob)), str(len(data)), name, mode, op] + [fmt(a) for a in args]))
                blob += data
    with open(os.path.join(outdir, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(outdir, "goldens.bin"), "wb") as f:
        f.write(bytes(blob))


def image_hash(arr):
    b = np.ascontiguousarray(arr).reshape(-1).astype(np.uint64)
    with np.errstate(over="ignore"):
        w = (np.arange(b.size, dtype=np.uint64) * np.uint64(2) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
        return int(np.sum(b * w, dtype=np.uint64))


def all_colours():
    p = np.arange(1 << 24, dtype=np.uint32)
    a = np.stack([(p >> 16) & 255, (p >> 8) & 255, p & 255], axis=1).astype(np.uint8)
    return Image.fromarray(a.reshape(4096, 4096, 3), "RGB")


def write_hashes(outdir):
    img = all_colours()
    rows = [("adjust_hue", v) for v in (0.0, -0.5, -0.1, 0.1, 0.5)]
    rows += [("adjust_saturation", v) for v in (0.5, 2.0)]
    rows += [("to_grayscale", 1)]
    with open(os.path.join(outdir, "hashes.txt"), "w") as f:
        f.write("# OP ARG HASH over the all-colours image (see make_color_goldens.py)\n")
        for op, arg in rows:
            f.write(f"{op} {fmt(arg)} {image_hash(np.asarray(getattr(F, op)(img, arg)))}\n")


def write_kernels(outdir, sigmas):
    with open(os.path.join(outdir, "kernels.txt"), "w") as f:
        f.write("# SIZE SIGMA HEX...: torchvision _get_gaussian_kernel1d float32 bits\n")
        for size in list(range(1, 64, 2)) + [101, 223, 511]:
            for s in sigmas if size < 64 else sigmas[:4]:
                k = _get_gaussian_kernel1d(size, s).numpy().view(np.uint32)
                f.write(f"{size} {fmt(s)} " + " ".join(f"{v:08x}" for v in k) + "\n")


def many(outdir, seed):
    """A large blur measurement set (not committed): crops of the photos,
    24 to 200 pixels a side, and a few of noise."""
    rng = np.random.default_rng(seed)
    photos = sorted(os.listdir(os.path.join(HERE, "photos")))
    sources = []
    for i in range(48):
        im = Image.open(os.path.join(HERE, "photos", photos[i % len(photos)])).convert("RGB")
        if i % 8 == 7:
            im = Image.fromarray(rng.integers(0, 256, (300, 300, 3), dtype=np.uint8), "RGB")
        w, h = int(rng.integers(24, 201)), int(rng.integers(24, 201))
        x, y = int(rng.integers(0, im.width - w)), int(rng.integers(0, im.height - h))
        sources.append((f"m{i:02d}", im.crop((x, y, x + w, y + h))))
    case_list = []
    for _ in range(40):
        kx, ky = (int(rng.integers(0, 12)) * 2 + 1 for _ in range(2))
        sx, sy = (float(np.float32(rng.uniform(0.1, 2.0))) for _ in range(2))
        case_list.append(("gaussian_blur", [kx, ky, sx, sy]))
    write_set(outdir, sources, case_list)


def main():
    torch.set_num_threads(1)
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--many":
        many(sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 24)
        return
    sources = load_sources(HERE)
    write_set(OUT, sources, list(cases()))
    write_hashes(OUT)
    rng = np.random.default_rng(7)
    sigmas = [0.1, 1.1, 2.0, 40.0, 0.5, 1.0, 1.37, 5.0] + [float(np.float32(v)) for v in rng.uniform(0.1, 3.0, 13)]
    write_kernels(OUT, sigmas)


if __name__ == "__main__":
    main()
