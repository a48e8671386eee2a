#!/usr/bin/python3
"""Writes the committed BMP and PNM test files and their Pillow goldens.

usage: /usr/bin/python3 tests/data/image/make_bmp_pnm.py [OUT]

OUT (default: tests/data/image/bmp_pnm/) gets each file NAME with NAME.ppm
beside it: the pixels of Pillow's Image.open(NAME).convert("RGB") as a
binary P6; OUT/manifest.txt lists the names (see pillow_rgb.py).

Files come from Pillow's own writers and from hand-made bytes for the
variants Pillow cannot write (4-bit, 16-bit, bit fields, top-down, OS/2,
short palettes, plain PNM, 16-bit PNM, odd maxvals). A hand-made file that
Pillow itself refuses is left out and listed on stdout as "pillow-refuses".
Deterministic (a seeded random.Random) with Debian 12's Pillow 9.4.0.
"""
import io
import os
import random
import struct
import sys

from PIL import Image

import pillow_rgb

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "bmp_pnm")
pillow_rgb.clear(out)
names = []
rng = random.Random(20261124)


def rand_bytes(n):
    return bytes(rng.randrange(256) for _ in range(n))


def emit(name, data):
    try:
        im = Image.open(io.BytesIO(data))
        rgb = im.convert("RGB")
    except Exception as e:  # noqa: BLE001 - Pillow's refusal is the answer
        print("pillow-refuses", name, repr(e))
        return
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    with open(os.path.join(out, name + ".ppm"), "wb") as f:
        f.write(pillow_rgb.ppm_bytes(rgb))
    names.append(name)
    print("wrote", name)


def pillow_save(name, im, fmt):
    buf = io.BytesIO()
    im.save(buf, fmt)
    emit(name, buf.getvalue())


def rand_image(mode, w, h):
    bands = len(mode) if mode not in ("L", "P", "1") else 1
    data = rand_bytes(w * h * bands)
    im = Image.frombytes(mode if mode != "1" else "L", (w, h), data)
    return im.convert("1") if mode == "1" else im


# --- BMP through Pillow's writer ---------------------------------------------
pillow_save("rgb24.bmp", rand_image("RGB", 37, 23), "BMP")
pillow_save("gray8.bmp", rand_image("L", 31, 17), "BMP")
pillow_save("bilevel.bmp", rand_image("1", 29, 11), "BMP")
pillow_save("rgba32.bmp", rand_image("RGBA", 19, 13), "BMP")
pillow_save("palette8.bmp", rand_image("RGB", 33, 21).quantize(200), "BMP")
pillow_save("palette8_few.bmp", rand_image("RGB", 17, 9).quantize(5), "BMP")


# --- BMP by hand -------------------------------------------------------------
def bmp(w, h, bits, rows, palette=None, compression=0, masks=None, header=40, top_down=False,
        clr_used=None, zero_offset=False, entry=4):
    """rows: list of bytes, top row first, unpadded."""
    stride = ((w * bits + 31) >> 3) & ~3
    ordered = rows if top_down else rows[::-1]
    pixels = b"".join(r + b"\0" * (stride - len(r)) for r in ordered)
    pal = b""
    if palette is not None:
        pal = b"".join(bytes((b, g, r)) + (b"\0" if entry == 4 else b"") for r, g, b in palette)
    extra = b""
    if header == 12:
        info = struct.pack("<IHHHH", 12, w, h, 1, bits)
    else:
        ncol = len(palette) if (palette is not None and clr_used is None) else (clr_used or 0)
        info = struct.pack("<IiiHHIIiiII", header, w, -h if top_down else h, 1, bits, compression,
                           len(pixels), 2835, 2835, ncol, 0)
        if masks is not None and header == 40:
            extra = struct.pack("<III", *masks[:3])
        tail = b""
        if header > 40:
            m = list(masks or (0, 0, 0, 0)) + [0] * 4
            tail = struct.pack("<IIII", *m[:4])
        info = (info + tail + b"\0" * header)[:header]
    offset = 14 + len(info) + len(extra) + len(pal)
    head = b"BM" + struct.pack("<IHHI", offset + len(pixels), 0, 0, 0 if zero_offset else offset)
    return head + info + extra + pal + pixels


def rand_palette(n):
    return [tuple(rand_bytes(3)) for _ in range(n)]


def packed_rows(w, h, bits, maxindex):
    rows = []
    for _ in range(h):
        idx = [rng.randrange(maxindex) for _ in range(w)]
        per = 8 // bits
        row = bytearray()
        for i in range(0, w, per):
            v = 0
            for j in range(per):
                v = (v << bits) | (idx[i + j] if i + j < w else 0)
            row.append(v)
        rows.append(bytes(row))
    return rows


emit("pal4_odd.bmp", bmp(13, 7, 4, packed_rows(13, 7, 4, 16), rand_palette(16)))
emit("pal4_short.bmp", bmp(11, 5, 4, packed_rows(11, 5, 4, 16), rand_palette(6)))
emit("pal1_color.bmp", bmp(21, 6, 1, packed_rows(21, 6, 1, 2), rand_palette(2)))
emit("pal8_short.bmp", bmp(15, 8, 8, packed_rows(15, 8, 8, 256), rand_palette(5)))
emit("pal8_topdown.bmp", bmp(15, 8, 8, packed_rows(15, 8, 8, 256), rand_palette(256), top_down=True))
emit("rgb24_topdown.bmp", bmp(9, 6, 24, [rand_bytes(27) for _ in range(6)], top_down=True))
emit("rgb24_offset0.bmp", bmp(9, 6, 24, [rand_bytes(27) for _ in range(6)], zero_offset=True))
emit("rgb555.bmp", bmp(11, 7, 16, [rand_bytes(22) for _ in range(7)]))
emit("rgb555_bitfields.bmp", bmp(11, 7, 16, [rand_bytes(22) for _ in range(7)], compression=3,
                                 masks=(0x7C00, 0x3E0, 0x1F)))
emit("rgb565_bitfields.bmp", bmp(11, 7, 16, [rand_bytes(22) for _ in range(7)], compression=3,
                                 masks=(0xF800, 0x7E0, 0x1F)))
emit("rgb565_v5_topdown.bmp", bmp(10, 4, 16, [rand_bytes(20) for _ in range(4)], compression=3,
                                  masks=(0xF800, 0x7E0, 0x1F, 0), header=124, top_down=True))
emit("bgrx32.bmp", bmp(7, 5, 32, [rand_bytes(28) for _ in range(5)]))
emit("bgra32_v4.bmp", bmp(7, 5, 32, [rand_bytes(28) for _ in range(5)], compression=3,
                          masks=(0xFF0000, 0xFF00, 0xFF, 0xFF000000), header=108))
emit("rgba32_v5.bmp", bmp(7, 5, 32, [rand_bytes(28) for _ in range(5)], compression=3,
                          masks=(0xFF, 0xFF00, 0xFF0000, 0xFF000000), header=124))
emit("xbgr32_v4.bmp", bmp(7, 5, 32, [rand_bytes(28) for _ in range(5)], compression=3,
                          masks=(0xFF000000, 0xFF0000, 0xFF00, 0), header=108))
emit("bgrx32_bitfields40.bmp", bmp(6, 3, 32, [rand_bytes(24) for _ in range(3)], compression=3,
                                   masks=(0xFF0000, 0xFF00, 0xFF)))
emit("rgb24_v5.bmp", bmp(8, 3, 24, [rand_bytes(24) for _ in range(3)], header=124))
emit("os2_rgb24.bmp", bmp(9, 4, 24, [rand_bytes(27) for _ in range(4)], header=12))
emit("os2_pal8.bmp", bmp(9, 4, 8, packed_rows(9, 4, 8, 256), rand_palette(256), header=12, entry=3))


# --- PNM through Pillow's writer ---------------------------------------------
pillow_save("rgb.ppm", rand_image("RGB", 37, 23), "PPM")
pillow_save("gray.pgm", rand_image("L", 31, 17), "PPM")
pillow_save("bilevel.pbm", rand_image("1", 29, 11), "PPM")


# --- PNM by hand -------------------------------------------------------------
def samples(n, maxval, over=0):
    return [rng.randrange(maxval + 1 + over) for _ in range(n)]


def binary(magic, w, h, maxval, vals, comment=False):
    head = b"%s\n" % magic
    if comment:
        head += b"# a comment\n"
    head += b"%d %d\n%d\n" % (w, h, maxval)
    if maxval < 256:
        return head + bytes(vals)
    return head + b"".join(struct.pack(">H", v) for v in vals)


def plain(magic, w, h, maxval, vals, per_line=7):
    head = b"%s\n# plain\n%d %d\n%d\n" % (magic, w, h, maxval)
    lines = [b" ".join(b"%d" % v for v in vals[i:i + per_line]) for i in range(0, len(vals), per_line)]
    return head + b"\n".join(lines) + b"\n"


emit("gray_max255_comment.pgm", binary(b"P5", 13, 9, 255, samples(117, 255), comment=True))
emit("gray_max100.pgm", binary(b"P5", 13, 9, 100, samples(117, 100)))
emit("gray_max7.pgm", binary(b"P5", 13, 9, 7, samples(117, 7)))
emit("gray16_max65535.pgm", binary(b"P5", 13, 9, 65535, [rng.choice((0, 1, 200, 255, 256, 40000, 65535))
                                                          for _ in range(117)]))
emit("gray16_max1000.pgm", binary(b"P5", 13, 9, 1000, samples(117, 1000)))
emit("gray16_max300_small.pgm", binary(b"P5", 13, 9, 300, samples(117, 2)))
emit("rgb_max100.ppm", binary(b"P6", 11, 7, 100, samples(231, 100)))
emit("rgb_max100_over.ppm", binary(b"P6", 11, 7, 100, samples(231, 100, over=155)))
emit("rgb16_max65535.ppm", binary(b"P6", 11, 7, 65535, samples(231, 65535)))
emit("rgb16_max1000.ppm", binary(b"P6", 11, 7, 1000, samples(231, 1000)))
emit("rgb16_max1000_over.ppm", binary(b"P6", 11, 7, 1000, samples(231, 1000, over=3000)))
emit("plain_gray.pgm", plain(b"P2", 13, 9, 255, samples(117, 255)))
emit("plain_gray_max15.pgm", plain(b"P2", 13, 9, 15, samples(117, 15)))
emit("plain_gray16.pgm", plain(b"P2", 13, 9, 1000, samples(117, 1000)))
emit("plain_rgb.ppm", plain(b"P3", 11, 7, 255, samples(231, 255)))
emit("plain_rgb_max7.ppm", plain(b"P3", 11, 7, 7, samples(231, 7)))
emit("plain_rgb16.ppm", plain(b"P3", 11, 7, 4095, samples(231, 4095)))
bits = samples(9 * 5, 1)
emit("plain_bilevel.pbm", b"P1\n9 5\n" + b"\n".join(b" ".join(b"%d" % v for v in bits[i:i + 9])
                                                     for i in range(0, 45, 9)) + b"\n")
emit("plain_bilevel_packed.pbm", b"P1 9 5\n# no spaces\n" + b"".join(b"%d" % v for v in bits) + b"\n")
emit("bilevel_odd.pbm", b"P4\n# odd width\n13 6\n" + rand_bytes(2 * 6))
# Pillow 9.4 repeats a final token that has no whitespace after it.
emit("plain_gray_unterminated.pgm", b"P2\n5 3\n255\n1 2 3 40")


# --- BMP RLE8 / RLE4 (Pillow cannot write them) ------------------------------
def rle_bmp(w, h, bits, compression, stream, palette):
    pal = b"".join(bytes((b, g, r, 0)) for r, g, b in palette)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, bits, compression, len(stream), 0, 0, len(palette), 0)
    offset = 14 + 40 + len(pal)
    return b"BM" + struct.pack("<IHHI", offset + len(stream), 0, 0, offset) + info + pal + stream


def rle8_stream(w, h):
    out = bytearray()
    for _ in range(h):
        x = 0
        while x < w:
            if rng.random() < 0.5:
                n = rng.randrange(1, min(w - x, 9) + 1)
                out += bytes((n, rng.randrange(256)))
            else:
                n = rng.randrange(3, 12)
                n = min(n, w - x)
                if n < 3:
                    out += bytes((n, rng.randrange(256)))
                else:
                    out += bytes((0, n)) + rand_bytes(n) + (b"\0" if n % 2 else b"")
            x += n
        out += b"\0\0"
    return bytes(out + b"\0\1")


def rle4_stream(w, h):
    out = bytearray()
    for _ in range(h):
        x = 0
        while x < w:
            if rng.random() < 0.5 or w - x < 4:
                n = rng.randrange(1, min(w - x, 9) + 1)
                out += bytes((n, rng.randrange(256)))
            else:
                n = 2 * rng.randrange(2, (w - x) // 2 + 1)
                body = rand_bytes(n // 2)
                out += bytes((0, n)) + body + (b"\0" if len(body) % 2 else b"")
            x += n
        out += b"\0\0"
    return bytes(out + b"\0\1")


emit("rle8.bmp", rle_bmp(23, 9, 8, 1, rle8_stream(23, 9), rand_palette(256)))
emit("rle4.bmp", rle_bmp(22, 9, 4, 2, rle4_stream(22, 9), rand_palette(16)))
# Delta escapes and short rows (zero-filled by end-of-line).
emit("rle8_delta.bmp", rle_bmp(16, 6, 8, 1, bytes((3, 7, 0, 0, 0, 2, 0, 0, 5, 1, 2, 9, 0, 0, 4, 200, 0, 0,
                                                    16, 3, 0, 0, 16, 4, 0, 0, 0, 1)), rand_palette(256)))


# --- Palette and token edge cases (added after the rest: the seeded draws
# above stay as they were) ----------------------------------------------------
BW = [(0, 0, 0), (255, 255, 255)]
GRAY16 = [(i, i, i) for i in range(16)]
# A black-and-white palette makes Pillow's mode "1" whatever the depth: the
# rows of a 4- or 8-bit file are then read one bit per pixel.
emit("pal4_bw.bmp", bmp(29, 7, 4, packed_rows(29, 7, 4, 16), BW))
emit("pal8_bw.bmp", bmp(37, 9, 8, packed_rows(37, 9, 8, 256), BW))
# White first is no gray ramp: a two-colour palette image ("P").
emit("pal8_wb.bmp", bmp(19, 6, 8, packed_rows(19, 6, 8, 2), [(255, 255, 255), (0, 0, 0)]))
# A short gray ramp is mode "L": index i is gray i, also past the palette.
emit("pal8_gray16.bmp", bmp(23, 7, 8, packed_rows(23, 7, 8, 256), GRAY16))
emit("pal8_gray300.bmp", bmp(11, 5, 8, packed_rows(11, 5, 8, 256), [(i % 256,) * 3 for i in range(300)]))
# "L" unpacks 8 bits a pixel, which a 4- or 1-bit row holds only when narrow.
emit("pal4_gray16_narrow.bmp", bmp(3, 5, 4, packed_rows(3, 5, 4, 16), GRAY16))
emit("pal1_gray1_narrow.bmp", bmp(4, 6, 1, packed_rows(4, 6, 1, 2), [(0, 0, 0)]))
emit("rle4_gray16.bmp", rle_bmp(22, 9, 4, 2, rle4_stream(22, 9), GRAY16))
# Header and plain-data numbers go through Python's int(): signs, underscores
# and (plain data only) negative values, whose low byte Pillow keeps.
emit("plus_header.ppm", b"P6\n+11 +0_7\n+2_55\n" + rand_bytes(231))
emit("plain_signs.pgm", b"P2\n+13 9\n255\n" + b" ".join(rng.choice((b"+%d", b"-%d", b"%d", b"0_%d"))
                                                           % rng.randrange(256) for _ in range(117)) + b"\n")
emit("plain_negative.ppm", b"P3\n7 5\n100\n" + b" ".join(b"%d" % rng.randrange(-100, 101)
                                                           for _ in range(105)) + b"\n")
emit("plain_gray16_signs.pgm", b"P2\n5 3\n1000\n-0 +1 +1_000 0_999 -0 " + b" ".join(
    b"+%d" % rng.randrange(1001) for _ in range(10)) + b"\n")

pillow_rgb.write_manifest(out, names, "make_bmp_pnm.py")
