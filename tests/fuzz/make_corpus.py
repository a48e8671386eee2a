#!/usr/bin/python3
"""Writes the seed corpus of every fuzz target into tests/fuzz/corpus/<target>/.

Run with Debian's interpreter (python3-pil, python3-msgpack), from anywhere:

    /usr/bin/python3 tests/fuzz/make_corpus.py

Seeds are small valid inputs of each format, made by Python's tarfile (ustar,
GNU and pax archives, WebDataset layouts), Pillow (every image variant the
decoders handle, at 13x11 pixels so a run is fast) and by hand (manifests,
URLs, cache entries, msgpack records, EXIF blocks), plus the small JPEG and
PNG test files of tests/data/image/decode. Deterministic for the same
Pillow. Findings (inputs that once crashed) are committed beside the seeds,
named finding-*, and are not touched here.
"""
import io
import os
import struct
import sys
import tarfile

import msgpack
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
DECODE = os.path.join(HERE, "..", "data", "image", "decode")


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def picture(mode, size=(13, 11)):
    """A deterministic gradient in `mode`."""
    w, h = size
    rgba = Image.new("RGBA", size)
    rgba.putdata([((x * 19) % 256, (y * 23) % 256, ((x + y) * 11) % 256, (x * y * 7) % 256)
                  for y in range(h) for x in range(w)])
    if mode == "P":
        return rgba.convert("RGB").quantize(16)
    if mode == "I;16":
        return rgba.convert("L").convert("I").point(lambda v: v * 257).convert("I;16")
    return rgba.convert(mode)


def saved(im, fmt, **kw):
    buf = io.BytesIO()
    im.save(buf, format=fmt, **kw)
    return buf.getvalue()


# --- tar ------------------------------------------------------------------
def tar_bytes(fmt, members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            info.mtime = 1700000000
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                t.addfile(info)
            elif kind == "link":
                info.type = tarfile.SYMTYPE
                info.linkname = data.decode()
                t.addfile(info)
            else:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def tar_seeds():
    jpg = b"\xff\xd8\xff\xe0 not decoded by the index \xff\xd9"
    sample = [("s0.jpg", jpg, "file"), ("s0.cls", b"3", "file"), ("s1.png", b"\x89PNG", "file"),
              ("s1.cls", b"0\n", "file")]
    put("tar", "ustar_webdataset.tar", tar_bytes(tarfile.USTAR_FORMAT, sample))
    long = "d" * 90 + "/" + "k" * 70
    put("tar", "gnu_long_names.tar", tar_bytes(tarfile.GNU_FORMAT, [
        ("dir", b"", "dir"), (long + ".jpg", jpg, "file"), (long + ".cls", b"1", "file"),
        ("ln.jpg", ("t" * 120).encode(), "link")]))
    put("tar", "pax_long_names.tar", tar_bytes(tarfile.PAX_FORMAT, [
        (long + ".jpeg", jpg, "file"), (long + ".cls", b"7", "file"), ("ü/x.webp", b"RIFF", "file"),
        ("ü/x.cls", b"2", "file")]))
    put("tar", "ustar_prefix.tar", tar_bytes(tarfile.USTAR_FORMAT, [
        ("p" * 120 + "/a.jpg", jpg, "file"), ("p" * 120 + "/a.cls", b"5", "file")]))
    # A pax global header, then a member whose size the pax record gives.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT,
                      pax_headers={"comment": "global"}) as t:
        for name, data in (("g.jpg", jpg), ("g.cls", b"4")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.pax_headers = {"size": str(len(data))}
            t.addfile(info, io.BytesIO(data))
    put("tar", "pax_global_and_size.tar", buf.getvalue())


# --- manifests, URLs --------------------------------------------------------
def text_seeds():
    put("manifest", "plain.csv", b"a/1.jpg,0\nb/2.png,1\n")
    put("manifest", "header_quotes.csv", b'\xef\xbb\xbfpath,label\n"a, b.jpg",3\r\n"say ""hi"".png",-2\n\n')
    put("manifest", "tabs.tsv", b"x\t7\ny z.jpg\t8\n")
    for i, url in enumerate((b"nfs://server/export/train", b"nfs://10.0.0.1:2049/data//imagenet/val",
                             b"nfs://[fe80::1]:2049/e/x", b"NFS://host/e")):
        put("nfs_url", f"url{i}.txt", url)


# --- EXIF ------------------------------------------------------------------
def exif_seeds():
    def tiff(order, orientation):
        e = "<" if order == b"II" else ">"
        head = order + struct.pack(e + "HI", 42, 8)
        ifd = struct.pack(e + "H", 1) + struct.pack(e + "HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack(e + "I", 0)
        return head + ifd
    put("exif", "tiff_le.bin", tiff(b"II", 6))
    put("exif", "tiff_be.bin", tiff(b"MM", 8))
    app1 = b"Exif\x00\x00" + tiff(b"II", 3)
    put("exif", "jpeg_app1.jpg", b"\xff\xd8\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + b"\xff\xda\x00\x02")
    with open(os.path.join(DECODE, "exif6.jpg"), "rb") as f:
        put("exif", "exif6.jpg", f.read())


# --- cache entries, LMDB records --------------------------------------------
def store_seeds():
    key = b"nfs://server/export/train/n01440764/x.JPEG"  # the key cache_fuzz.cpp reads
    payload = b"\xff\xd8 cached image bytes \xff\xd9"
    entry = b"RFCACHE1" + struct.pack("<I", len(key)) + key + struct.pack("<Q", len(payload)) + payload
    put("cache", "entry.bin", entry)
    other = b"nfs://server/export/other.jpg"
    put("cache", "other_key.bin", b"RFCACHE1" + struct.pack("<I", len(other)) + other + struct.pack("<Q", 3) + b"abc")
    put("cache", "empty_payload.bin", b"RFCACHE1" + struct.pack("<I", len(key)) + key + struct.pack("<Q", 0))

    sep = b"\nRFKEY\n"
    img = b"\xff\xd8 image \xff\xd9"
    put("lmdb", "two_records.bin", sep.join([b"2", msgpack.packb([img, 3]), msgpack.packb([img * 9, 70000])]))
    put("lmdb", "msgpack_len.bin", sep.join([msgpack.packb(1), msgpack.packb([img.decode("latin-1"), -1])]))
    put("lmdb", "no_len.bin", sep.join([b"", msgpack.packb([img, 0]), msgpack.packb([b"", 2**62])]))


# --- images -------------------------------------------------------------------
def image_seeds():
    for name in sorted(os.listdir(DECODE)):
        if name.endswith((".jpg", ".png")):
            with open(os.path.join(DECODE, name), "rb") as f:
                put("decode_jpeg" if name.endswith(".jpg") else "decode_png", name, f.read())
    rgb, rgba = picture("RGB"), picture("RGBA")
    put("decode_jpeg", "tiny_baseline.jpg", saved(rgb, "JPEG", quality=80))
    put("decode_jpeg", "tiny_progressive.jpg", saved(rgb, "JPEG", progressive=True, quality=60))
    put("decode_png", "tiny_rgba.png", saved(rgba, "PNG"))
    put("decode_png", "tiny_palette.png", saved(picture("P"), "PNG"))

    put("decode_webp", "lossy.webp", saved(rgb, "WEBP", quality=70))
    put("decode_webp", "lossless_alpha.webp", saved(rgba, "WEBP", lossless=True))
    put("decode_webp", "lossy_alpha.webp", saved(rgba, "WEBP", quality=50))
    put("decode_webp", "animated.webp", saved(rgb, "WEBP", save_all=True, lossless=True, duration=40,
                                              append_images=[picture("RGB").transpose(Image.FLIP_LEFT_RIGHT)]))

    for name, im, kw in (("raw_rgb", rgb, {}), ("lzw_rgba", rgba, {"compression": "tiff_lzw"}),
                         ("deflate_gray", picture("L"), {"compression": "tiff_adobe_deflate"}),
                         ("packbits_palette", picture("P"), {"compression": "packbits"}),
                         ("bilevel_g4", picture("1"), {"compression": "group4"}),
                         ("cmyk", picture("CMYK"), {}), ("jpeg_ycbcr", rgb, {"compression": "jpeg"}),
                         ("gray16", picture("I;16"), {})):
        put("decode_tiff", name + ".tif", saved(im, "TIFF", **kw))
    put("decode_tiff", "two_pages.tif", saved(rgb, "TIFF", save_all=True, append_images=[picture("L")]))

    for name, im in (("bpp1", picture("1")), ("bpp8_palette", picture("P")), ("bpp8_gray", picture("L")),
                     ("bpp24", rgb), ("bpp32", rgba)):
        put("decode_bmp", name + ".bmp", saved(im, "BMP"))

    put("decode_pnm", "p4.pbm", saved(picture("1"), "PPM"))
    put("decode_pnm", "p5.pgm", saved(picture("L"), "PPM"))
    put("decode_pnm", "p6.ppm", saved(rgb, "PPM"))
    put("decode_pnm", "p1.pbm", b"P1\n# ascii\n3 2\n1 0 1\n0 1 0\n")
    put("decode_pnm", "p2_16bit.pgm", b"P2\n2 2\n65535\n0 1000\n40000 65535\n")
    put("decode_pnm", "p3.ppm", b"P3\n2 1\n15\n15 0 0  0 7 15\n")
    put("decode_pnm", "p5_16bit.pgm", b"P5\n2 1\n1023\n" + struct.pack(">HH", 5, 1023))


if __name__ == "__main__":
    tar_seeds()
    text_seeds()
    exif_seeds()
    store_seeds()
    image_seeds()
    print("corpus written to", CORPUS, file=sys.stderr)
