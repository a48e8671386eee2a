#!/usr/bin/python3
"""Writes the committed TIFF test files and their Pillow goldens.

usage: /usr/bin/python3 tests/data/image/make_tiff.py [OUT]

OUT (default: tests/data/image/tiff/) gets every variant as NAME.tif with
NAME.tif.ppm beside it: Pillow's Image.open(f).convert("RGB") as a binary
P6; OUT/manifest.txt lists the names (see pillow_rgb.py). Pillow writes most
variants, the 16-bit RGB and float ones are written by hand and the tiled,
planar and YCbCr-JPEG layouts by libtiff's tiffcp (apt-get install
libtiff-tools). Deterministic with Debian 12's Pillow 9.4.0 and libtiff
4.5.0. Used by tests/image_tiff_tests.cpp.
"""
import os
import subprocess
import sys

import numpy as np
from PIL import Image

import pillow_rgb

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiff")
pillow_rgb.clear(out)
W, H = 37, 23
yy, xx = np.mgrid[0:H, 0:W]
rng = np.random.default_rng(1234)
rgb = np.stack([(xx * 7) % 256, (yy * 11) % 256, (xx * yy) % 256], axis=-1).astype(np.uint8)
rgb[5:9, 5:20] = rng.integers(0, 256, (4, 15, 3), dtype=np.uint8)
gray = ((xx * 5 + yy * 3) % 256).astype(np.uint8)
alpha = ((xx * 13) % 256).astype(np.uint8)

cases = {}
base = Image.fromarray(rgb, "RGB")
for comp in ["raw", "tiff_lzw", "tiff_adobe_deflate", "packbits"]:
    cases["rgb_" + comp] = (base, dict(compression=comp))
cases["rgb_jpeg"] = (base, dict(compression="jpeg", quality=90))
cases["rgba"] = (Image.fromarray(np.dstack([rgb, alpha]), "RGBA"), dict(compression="tiff_lzw"))
cases["gray"] = (Image.fromarray(gray, "L"), dict(compression="tiff_adobe_deflate"))
cases["gray_jpeg"] = (Image.fromarray(gray, "L"), dict(compression="jpeg"))
g16 = (xx * 1789 + yy * 97).astype(np.uint16)
g16[0, :10] = [0, 1, 100, 254, 255, 256, 1000, 65534, 65535, 300]
cases["gray16"] = (Image.fromarray(g16, "I;16"), dict())
cases["bilevel"] = (Image.fromarray(gray > 100).convert("1"), dict())
cases["bilevel_g4"] = (Image.fromarray(gray > 100).convert("1"), dict(compression="group4"))
cases["palette"] = (base.quantize(50), dict(compression="tiff_lzw"))
cmyk = np.stack([rgb[..., 0], rgb[..., 1], rgb[..., 2], gray], axis=-1)
cases["cmyk"] = (Image.fromarray(cmyk, "CMYK"), dict())
cases["la"] = (Image.fromarray(np.dstack([gray, alpha]), "LA"), dict())

for name, (im, kw) in cases.items():
    im.save(os.path.join(out, name + ".tif"), **kw)

# Three pages: only the first is decoded.
pages = [base, base.transpose(Image.FLIP_LEFT_RIGHT), Image.fromarray(gray, "L").convert("RGB")]
pages[0].save(os.path.join(out, "multipage.tif"), save_all=True, append_images=pages[1:])
with Image.open(os.path.join(out, "multipage.tif")) as r:
    assert r.n_frames == 3

# Pillow 9.4 cannot write 16-bit RGB or float samples: written by hand
# (little-endian, one uncompressed strip). BitsPerSample is the third IFD
# entry, PhotometricInterpretation the fifth: image_tiff_tests.cpp patches them.
def write_raw_tiff(path, width, height, bps, spp, fmt, photometric, data, extra=None):
    import struct
    entries = [
        (256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, bps), (259, 3, 1, 1),
        (262, 3, 1, photometric), (273, 4, 1, 0), (277, 3, 1, spp), (278, 4, 1, height),
        (279, 4, 1, len(data)), (284, 3, 1, 1), (339, 3, 1, fmt)]
    if extra is not None:  # ExtraSamples, one value (tags stay sorted)
        entries.insert(-1, (338, 3, 1, extra))
    ifd_off = 8
    n = len(entries)
    extra_off = ifd_off + 2 + 12 * n + 4
    extra = b""
    fixed = []
    for tag, typ, cnt, val in entries:
        if tag in (258, 339) and spp > 1:
            arr = struct.pack("<" + "H" * spp, *([val] * spp))
            if len(arr) <= 4:
                fixed.append((tag, typ, spp, arr.ljust(4, b"\0")))
            else:
                fixed.append((tag, typ, spp, struct.pack("<I", extra_off + len(extra))))
                extra += arr
            continue
        fixed.append((tag, typ, cnt, val))
    data_off = extra_off + len(extra)
    body = struct.pack("<2sHI", b"II", 42, ifd_off) + struct.pack("<H", n)
    for tag, typ, cnt, val in fixed:
        if tag == 273:
            val = data_off
        if isinstance(val, bytes):
            body += struct.pack("<HHI", tag, typ, cnt) + val
        elif typ == 3:
            body += struct.pack("<HHIHH", tag, typ, cnt, val, 0)
        else:
            body += struct.pack("<HHII", tag, typ, cnt, val)
    body += struct.pack("<I", 0) + extra + data
    with open(path, "wb") as f:
        f.write(body)

write_raw_tiff(os.path.join(out, "rgb16.tif"), W, H, 16, 3, 1, 2,
               (np.dstack([g16, g16 // 3, 65535 - g16]).astype("<u2")).tobytes())
write_raw_tiff(os.path.join(out, "float32.tif"), W, H, 32, 1, 3, 1,
               (gray.astype("<f4") / 255).tobytes())
# Variants Pillow reads but does not write. Premultiplied (associated,
# ExtraSamples = 1) alpha, 8 and 16 bits: Pillow's "RGBa" unpackers undo it
# (v * 255 / a on the high bytes). Min-is-white 16-bit gray and float:
# Pillow's "I;16" and "F" read the samples as they are (not inverted).
rgba_pm = np.dstack([rgb, alpha]).astype(np.uint16)
rgba_pm[..., :3] = rgba_pm[..., :3] * rgba_pm[..., 3:] // 255  # premultiply
rgba_pm[0, :4, 3] = [0, 255, 1, 128]
rgba_pm[0, 2, :3] = [1, 0, 2]  # alpha 1: 255, 0, 255 after the division
write_raw_tiff(os.path.join(out, "rgba_premultiplied.tif"), W, H, 8, 4, 1, 2,
               rgba_pm.astype(np.uint8).tobytes(), extra=1)
rgba16_pm = (np.dstack([g16, g16 // 3, 65535 - g16, (xx * 2900 + 7).astype(np.uint16)])).astype(np.uint32)
rgba16_pm[..., :3] = rgba16_pm[..., :3] * rgba16_pm[..., 3:] // 65535
write_raw_tiff(os.path.join(out, "rgba16_premultiplied.tif"), W, H, 16, 4, 1, 2,
               rgba16_pm.astype("<u2").tobytes(), extra=1)
write_raw_tiff(os.path.join(out, "gray16_miniswhite.tif"), W, H, 16, 1, 1, 0, g16.astype("<u2").tobytes())
write_raw_tiff(os.path.join(out, "float32_miniswhite.tif"), W, H, 32, 1, 3, 0,
               (gray.astype("<f4") * 1.5 - 60).tobytes())
# 12-bit gray (little-endian, min-is-black: the one 12-bit layout Pillow 9.4
# opens, as "I;16" through its I;12 unpacker): samples packed MSB first,
# each row to a byte boundary. convert("RGB") clips them at 255.
g12 = ((xx * 97 + yy * 13) % 4096).astype(np.uint16)
g12[0, :8] = [0, 1, 100, 254, 255, 256, 4095, 300]
g12[1:4, :] = (xx[1:4, :] * 7) % 256  # rows Pillow does not clip


def pack12(a):
    rows = []
    for row in a:
        bits = "".join(format(int(v), "012b") for v in row)
        bits += "0" * (-len(bits) % 8)
        rows.append(int(bits, 2).to_bytes(len(bits) // 8, "big"))
    return b"".join(rows)


write_raw_tiff(os.path.join(out, "gray12.tif"), W, H, 12, 1, 1, 1, pack12(g12))
# Layouts Pillow does not write, made from rgb_raw.tif by libtiff's tiffcp:
# tiles, separate planes, JPEG in YCbCr (subsampled 2x2).
for name, args in [("rgb_tiled", ["-t", "-w", "16", "-l", "16", "-c", "lzw"]),
                   ("rgb_planar", ["-p", "separate"]),
                   ("rgb_ycbcr_jpeg", ["-c", "jpeg:90", "-r", "16"])]:
    subprocess.run(["tiffcp"] + args + [os.path.join(out, "rgb_raw.tif"), os.path.join(out, name + ".tif")],
                   check=True)
subprocess.run(["tiffcp", "-t", "-w", "16", "-l", "16", os.path.join(out, "rgb16.tif"),
                os.path.join(out, "rgb16_tiled.tif")], check=True)
# BigTIFF (little-endian: Pillow 9.4 misreads "MM\0+"), and premultiplied
# alpha through Pillow's libtiff reader (compressed), contiguous and planar.
for name, src, args in [("rgb_bigtiff", "rgb_raw", ["-8", "-L", "-c", "lzw"]),
                        ("rgba_premultiplied_bigtiff", "rgba_premultiplied", ["-8", "-L"]),
                        ("rgba_premultiplied_lzw", "rgba_premultiplied", ["-c", "lzw"]),
                        ("rgba_premultiplied_planar_lzw", "rgba_premultiplied", ["-p", "separate", "-c", "lzw"]),
                        ("gray12_lzw", "gray12", ["-c", "lzw"])]:
    subprocess.run(["tiffcp"] + args + [os.path.join(out, src + ".tif"), os.path.join(out, name + ".tif")],
                   check=True)

names = []
for name in list(cases) + ["multipage", "rgb16", "float32", "rgb_tiled", "rgb_planar", "rgb_ycbcr_jpeg",
                           "rgb16_tiled", "rgba_premultiplied", "rgba16_premultiplied", "gray16_miniswhite",
                           "float32_miniswhite", "rgb_bigtiff", "rgba_premultiplied_bigtiff",
                           "rgba_premultiplied_lzw", "rgba_premultiplied_planar_lzw", "gray12", "gray12_lzw"]:
    try:
        pillow_rgb.write_golden(out, name + ".tif")
    except Exception as e:  # noqa: BLE001 - Pillow cannot read it: left out (and we must refuse it too)
        print(name, "pillow fails:", e, file=sys.stderr)
        os.remove(os.path.join(out, name + ".tif"))
        continue
    names.append(name + ".tif")
pillow_rgb.write_manifest(out, names, "make_tiff.py")
