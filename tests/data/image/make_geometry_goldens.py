#!/usr/bin/python3
"""Goldens for ringfeed's geometry ops (include/ringfeed/image/geometry.hpp):
torchvision 0.14's functional layer on PIL images, with Debian 12's Pillow
9.4, over small crops of the committed test images of every format.

    /usr/bin/python3 tests/data/image/make_geometry_goldens.py

Writes tests/data/image/geometry/:
  src/NAME.ppm|pgm   the inputs: Image.open(f).convert("RGB" | "L") of a
                     committed JPEG, PNG, WebP, TIFF, BMP or PGM, cropped to
                     at most 40 px a side (odd, non-square, square, 1x1, 2x3)
  goldens.bin        every output's pixels (uint8 HWC), concatenated
  cases.txt          "<offset> <w> <h> <channels> <src> <op> <args...>":
                     where the output lies in goldens.bin, then the input
                     and the op (see the test for the grammar); floats are
                     Python's repr (exact round trip)
  sizes.txt          _compute_resized_output_size with F.resize's checks:
                     "<w> <h> <n> <s...> <max_size|-> <out w> <out h>|error"
Deterministic: a rerun rewrites the folder byte for byte.
"""
import os
import shutil
import warnings

import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.transforms import InterpolationMode as IM

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "geometry")

INTERP = {"nearest": IM.NEAREST, "bilinear": IM.BILINEAR, "bicubic": IM.BICUBIC,
          "box": IM.BOX, "hamming": IM.HAMMING, "lanczos": IM.LANCZOS}


def open_as(path, mode):
    with open(os.path.join(HERE, path), "rb") as f:
        return Image.open(f).convert(mode)


def sources():
    """name -> PIL image. Each file converted as torchvision users do."""
    spec = [
        # name, file, box (left, top, right, bottom)
        ("jpg", "decode/s420.jpg", (3, 5, 40, 34)),            # 37x29
        ("png", "decode/palette.png", (10, 4, 39, 27)),        # 29x23
        ("webp", "webp/lossless.webp", (2, 3, 27, 34)),        # 25x31 (portrait)
        ("tif", "tiff/rgb_tiff_lzw.tif", (0, 0, 37, 23)),      # 37x23
        ("bmp", "bmp_pnm/rgb24.bmp", (4, 1, 28, 23)),          # 24x22
        ("pgm", "bmp_pnm/gray.pgm", (0, 0, 31, 17)),           # 31x17
        ("sq", "decode/progressive.jpg", (9, 7, 33, 31)),      # 24x24 square
        ("one", "decode/s444.jpg", (30, 20, 31, 21)),          # 1x1
        ("tiny", "decode/s422.jpg", (20, 10, 22, 13)),         # 2x3
    ]
    out = {}
    for name, path, box in spec:
        for mode, suffix in (("RGB", "rgb"), ("L", "l")):
            out[f"{name}_{suffix}"] = open_as(path, mode).crop(box)
    return out


def save(im, path):
    assert im.mode in ("RGB", "L"), im.mode
    im.save(path, format="PPM")


def ext(im):
    return "ppm" if im.mode == "RGB" else "pgm"


def fill_values(fill, im):
    """_parse_fill + Pillow's CLIP8, as the three bytes the C++ API takes."""
    clip = lambda v: max(0, min(255, int(v)))
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)):
        return [clip(fill)] * 3
    vals = [clip(v) for v in fill]
    return (vals + [0, 0])[:3]


class Cases:
    """Outputs packed into one file: a line per case gives where its pixels
    start in goldens.bin and their width, height and channel count."""

    def __init__(self, srcs):
        self.srcs = srcs
        self.lines = []
        self.blob = bytearray()

    def add(self, src, op, args, result):
        assert result.mode in ("RGB", "L"), result.mode
        head = [len(self.blob), result.width, result.height, 3 if result.mode == "RGB" else 1]
        self.blob += result.tobytes()
        self.lines.append(" ".join([str(v) for v in head] + [src, op] + [str(a) for a in args]))


def fl(v):
    return repr(float(v))


def main():
    torch.manual_seed(0)
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(os.path.join(OUT, "src"))
    srcs = sources()
    for name, im in srcs.items():
        save(im, os.path.join(OUT, "src", f"{name}.{ext(im)}"))
    c = Cases(srcs)
    every = sorted(srcs)
    main_srcs = ["jpg_rgb", "jpg_l", "webp_rgb", "pgm_l", "one_rgb", "tiny_l"]

    # resize: every interpolation, up and down, non-square, to and from 1 px.
    for interp in INTERP:
        for src in main_srcs:
            im = srcs[src]
            for size in ([13, 17], [40, 23], [1, 5], [3, 1]):
                if im.size == (1, 1) and size == [1, 5]:
                    size = [2, 7]
                out = F.resize(im, size, INTERP[interp])
                c.add(src, "resize", [out.width, out.height, interp], out)
        # the int / max_size forms on one image each
        for src, size, max_size in (("tif_rgb", [15], None), ("webp_l", [20], 26), ("png_rgb", [64], None)):
            out = F.resize(srcs[src], size, INTERP[interp], max_size=max_size)
            c.add(src, "resize", [out.width, out.height, interp], out)
    # nearest where the steps accumulate over many pixels
    for size in ([57, 61], [11, 7], [37, 29]):
        out = F.resize(srcs["jpg_rgb"], size, IM.NEAREST)
        c.add("jpg_rgb", "resize", [out.width, out.height, "nearest"], out)

    # crop (zero outside), hflip, vflip on every source
    for src in every:
        im = srcs[src]
        w, h = im.size
        for top, left, ch, cw in ((1, 2, max(1, h - 3), max(1, w - 2)), (-3, -2, h + 5, w + 1),
                                  (h - 1, w - 1, 4, 3), (0, 0, h, w), (-4, 5, 2, 2)):
            c.add(src, "crop", [top, left, ch, cw], F.crop(im, top, left, ch, cw))
        c.add(src, "hflip", [], F.hflip(im))
        c.add(src, "vflip", [], F.vflip(im))

    # pad: every mode, asymmetric, larger than the image, negative (crop)
    pads = [(1, 2, 3, 4), (0, 0, 5, 0), (7, 3, 40, 9), (-2, 1, 3, -1), (12, 13, 11, 15)]
    for src in ("jpg_rgb", "pgm_l", "tiny_rgb", "one_l", "sq_l", "bmp_rgb"):
        im = srcs[src]
        for mode in ("constant", "edge", "reflect", "symmetric"):
            for p in pads:
                for fill in ((0,) if mode != "constant" else (200, (10, 200, 77) if im.mode == "RGB" else 77, 300)):
                    try:
                        out = F.pad(im, list(p), fill=fill, padding_mode=mode)
                    except ValueError:
                        continue
                    if out.width == 0 or out.height == 0:
                        continue
                    c.add(src, "pad", list(p) + [mode] + fill_values(fill, im), out)
    # torchvision's int and 2-element forms resolve to (l, t, r, b)
    c.add("jpg_l", "pad", [4, 4, 4, 4, "reflect", 0, 0, 0], F.pad(srcs["jpg_l"], 4, padding_mode="reflect"))
    c.add("jpg_rgb", "pad", [4, 2, 4, 2, "constant", 0, 0, 0], F.pad(srcs["jpg_rgb"], [4, 2]))

    # affine through F.affine (center = (w * 0.5, h * 0.5))
    params = [  # angle, translate, scale, shear
        (0.0, (0, 0), 1.0, (10.0, 0.0)),
        (17.0, (0, 0), 1.0, (0.0, 0.0)),
        (-33.5, (3, -2), 1.0, (0.0, 0.0)),
        (90.0, (0, 0), 1.0, (0.0, 0.0)),
        (180.0, (0, 0), 1.0, (0.0, 0.0)),
        (0.0, (5, 7), 1.0, (0.0, 0.0)),
        (0.0, (0, 0), 1.7, (0.0, 0.0)),
        (0.0, (-4, 3), 0.6, (0.0, 0.0)),
        (25.0, (2, 1), 1.3, (12.0, -7.5)),
        (-110.25, (-1, 4), 0.8, (-20.0, 15.0)),
    ]
    for interp in ("nearest", "bilinear", "bicubic"):
        for src in ("jpg_rgb", "jpg_l", "webp_rgb", "pgm_l", "sq_rgb", "tiny_rgb", "one_l"):
            im = srcs[src]
            for angle, tr, scale, shear in params:
                for fill in ((0,) if (angle, scale) != (17.0, 1.0) else (0, (10, 200, 77) if im.mode == "RGB" else 200)):
                    out = F.affine(im, angle, list(tr), scale, list(shear), INTERP[interp], fill=fill)
                    c.add(src, "affine", [fl(angle), tr[0], tr[1], fl(scale), fl(shear[0]), fl(shear[1]), interp] +
                          fill_values(fill, im), out)
    # Image.transform with a raw matrix: the nearest float fallback (source
    # coordinates past 32768) and an output larger than the input.
    im = srcs["jpg_rgb"]
    for interp in ("nearest", "bilinear", "bicubic"):
        for m, size in (((0.7, 0.3, 40000.0, -0.2, 0.9, -39990.0), (30, 20)),
                        ((0.7, 0.3, -40000.0, -0.2, 0.9, 5.0), (30, 20)),
                        ((0.5, 0.1, -3.0, -0.1, 0.5, 2.0), (60, 50))):
            out = im.transform(size, Image.AFFINE, m, {"nearest": 0, "bilinear": 2, "bicubic": 3}[interp],
                               fillcolor=(1, 2, 3))
            c.add("jpg_rgb", "transform", [fl(v) for v in m] + [size[0], size[1], interp, 1, 2, 3], out)

    # rotate through F.rotate: fast paths (0, 90, 180, 270), expand, center
    angles = [17.0, -33.5, 90.0, 180.0, 270.0, 0.0, 360.0, 45.0, -90.0, 123.456]
    fast = (180.0, 270.0, 0.0, 360.0, -90.0)  # expand changes nothing there
    for interp in ("nearest", "bilinear", "bicubic"):
        for src in ("jpg_rgb", "pgm_l", "sq_l", "tiny_rgb", "webp_l", "one_rgb"):
            im = srcs[src]
            for angle in angles:
                for expand in (False, True) if angle not in fast or src == "jpg_rgb" else (False,):
                    for center in (None, (3, 5)) if angle in (17.0, 90.0) else (None,):
                        fill = (9, 99, 199) if im.mode == "RGB" and angle == -33.5 else (0 if angle != 45.0 else 250)
                        out = F.rotate(im, angle, INTERP[interp], expand, list(center) if center else None, fill)
                        cx, cy = (fl(center[0]), fl(center[1])) if center else ("-", "-")
                        c.add(src, "rotate", [fl(angle), interp, int(expand), cx, cy] + fill_values(fill, im), out)

    # The transform classes with their randomness pinned call F exactly so.
    for src in ("jpg_rgb", "webp_l", "sq_rgb"):
        im = srcs[src]
        out = T.RandomRotation((17, 17))(im)
        assert list(out.getdata()) == list(F.rotate(im, 17.0, IM.NEAREST, False, None, 0).getdata())
        c.add(src, "rotate", [fl(17.0), "nearest", 0, "-", "-", 0, 0, 0], out)
        out = T.RandomRotation((-33.5, -33.5), interpolation=IM.BILINEAR, expand=True, fill=128)(im)
        c.add(src, "rotate", [fl(-33.5), "bilinear", 1, "-", "-"] + fill_values(128, im), out)
        out = T.RandomAffine(0, shear=(10, 10, 0, 0))(im)
        assert list(out.getdata()) == list(F.affine(im, 0.0, [0, 0], 1.0, [10.0, 0.0]).getdata())
        c.add(src, "affine", [fl(0.0), 0, 0, fl(1.0), fl(10.0), fl(0.0), "nearest", 0, 0, 0], out)
        out = T.RandomAffine((17, 17), scale=(1.2, 1.2), shear=(-5, -5, 8, 8), interpolation=IM.BICUBIC, fill=60)(im)
        # get_params draws scale as a float32: 1.2 becomes 1.2000000476837158.
        scale = float(torch.empty(1).uniform_(1.2, 1.2).item())
        c.add(src, "affine", [fl(17.0), 0, 0, fl(scale), fl(-5.0), fl(8.0), "bicubic"] + fill_values(60, im), out)

    with open(os.path.join(OUT, "cases.txt"), "w") as f:
        f.write("# offset width height channels src op args (make_geometry_goldens.py)\n")
        f.write("\n".join(c.lines) + "\n")
    with open(os.path.join(OUT, "goldens.bin"), "wb") as f:
        f.write(bytes(c.blob))

    # resized_output_size, with F.resize's errors
    lines = []
    for (w, h) in ((500, 375), (375, 500), (640, 480), (61, 43), (1, 1), (1, 1000), (1000, 3), (333, 333), (7, 5)):
        for size, max_size in (([256], None), ([224], None), ([232], 300), ([232], 250), ([256], 256), ([256], 200),
                               ([100, 200], None), ([17, 9], 20), ([1], None), ([2], 3), ([5], 1000), ([1, 2, 3], None)):
            try:
                if len(size) not in (1, 2):
                    raise ValueError("size")
                if max_size is not None and len(size) != 1:
                    raise ValueError("max_size")
                oh, ow = F._compute_resized_output_size((h, w), size, max_size)
                res = f"{ow} {oh}"
            except ValueError:
                res = "error"
            lines.append(f"{w} {h} {len(size)} {' '.join(map(str, size))} {max_size if max_size else '-'} {res}")
    with open(os.path.join(OUT, "sizes.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
