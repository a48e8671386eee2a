#!/usr/bin/python3
"""Writes the committed orientation test files and their Pillow goldens.

usage: /usr/bin/python3 tests/data/image/make_orientation.py [OUT]

OUT (default: tests/data/image/orientation/) gets a 16x12 image (not square,
so a width/height swap shows) with each Orientation value 1..8, as TIFF
(tag 274 set by libtiff's tiffset, apt-get install libtiff-tools) and as
JPEG (EXIF APP1 written by Pillow), plus one LZW TIFF (Pillow reads it
through libtiff, the other TIFFs through its own decoder). Beside each input
NAME:

  NAME.ppm           Image.open(NAME).convert("RGB"): what torchvision's
                     ImageFolder delivers. Pillow 9.4 applies a TIFF's
                     Orientation tag on load (TiffImageFile.load_end) and
                     ignores a JPEG's EXIF orientation.
  NAME.oriented.ppm  ImageOps.exif_transpose(Image.open(NAME).convert("RGB")):
                     JPEG turned upright; TIFF as NAME.ppm (upright once).
                     Pillow 9.4's exif_transpose(Image.open(NAME)) on the
                     TIFF file object turns it a second time, a bug Pillow
                     10.1 fixed by deleting the tag once applied: not copied.

and OUT/manifest.txt lists the inputs (see pillow_rgb.py). Deterministic with
Debian 12's Pillow 9.4.0 and libtiff 4.5.0. Used by tests/image_decode_tests.cpp.
"""
import os
import subprocess
import sys

import numpy as np
from PIL import Image, ImageOps

import pillow_rgb

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                         "orientation")
pillow_rgb.clear(out)
W, H = 16, 12
yy, xx = np.mgrid[0:H, 0:W]
# Smooth ramps (JPEG keeps them) with a bright corner block at the top left
# so that each of the eight transposes looks different.
rgb = np.stack([xx * 15, yy * 20, 255 - (xx + yy) * 8], axis=-1).astype(np.uint8)
rgb[0:4, 0:5] = (250, 250, 40)
base = Image.fromarray(rgb, "RGB")

names = []
for o in range(1, 9):
    tif = f"tiff_o{o}.tif"
    base.save(os.path.join(out, tif))
    subprocess.run(["tiffset", "-s", "274", str(o), os.path.join(out, tif)], check=True)
    jpg = f"jpeg_o{o}.jpg"
    exif = Image.Exif()
    exif[0x0112] = o
    base.save(os.path.join(out, jpg), quality=95, subsampling=0, exif=exif.tobytes())
    names += [tif, jpg]
lzw = "tiff_lzw_o6.tif"
base.save(os.path.join(out, lzw), compression="tiff_lzw")
subprocess.run(["tiffset", "-s", "274", "6", os.path.join(out, lzw)], check=True)
names.append(lzw)


def oriented(path):
    with Image.open(path) as im:
        return ImageOps.exif_transpose(im.convert("RGB"))


for name in names:
    path = os.path.join(out, name)
    pillow_rgb.write_golden(out, name)
    with open(path + ".oriented.ppm", "wb") as f:
        f.write(pillow_rgb.ppm_bytes(oriented(path)))
    # What the goldens say, checked here: a TIFF is upright on open, a JPEG
    # only after exif_transpose (the same as exif_transpose on the file).
    with Image.open(path) as im:
        o = im.getexif().get(0x0112)
        plain = im.convert("RGB")
        assert o == int(name.split("_o")[1][0]), (name, o)
        if name.endswith(".tif"):
            assert oriented(path).tobytes() == plain.tobytes(), name
            assert plain.size == ((H, W) if o >= 5 else (W, H)), (name, plain.size)
        else:
            assert plain.size == (W, H), (name, plain.size)
            with Image.open(path) as again:
                assert ImageOps.exif_transpose(again).convert("RGB").tobytes() == oriented(path).tobytes(), name
pillow_rgb.write_manifest(out, names, "make_orientation.py")
