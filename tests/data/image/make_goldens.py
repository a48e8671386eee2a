#!/usr/bin/python3
"""Regenerates the image-layer test data and its Pillow / torchvision goldens.

Run with Debian's interpreter (the one that has python3-pil, python3-numpy and
python3-torchvision):

    apt-get install -y python3-pil python3-numpy python3-torchvision libjpeg-turbo-progs gcc libjpeg62-turbo-dev
    mkdir -p /tmp/debs && cd /tmp/debs && apt-get download python3-skimage python-matplotlib-data
    for f in *.deb; do dpkg -x "$f" /tmp/debs/x; done
    /usr/bin/python3 tests/data/image/make_goldens.py /tmp/debs/x

The photos come from those two Debian packages (see README.md for their
licenses). Everything written here is deterministic given the same Pillow,
torchvision and libjpeg-turbo versions (Debian 12: Pillow 9.4.0, torchvision
0.14.1, libjpeg-turbo 2.1.5).
"""
import io
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/debs/x"
SKIMAGE = os.path.join(ROOT, "usr/lib/python3/dist-packages/skimage/data")
MPL = os.path.join(ROOT, "usr/share/matplotlib/mpl-data/sample_data")


def out(*parts):
    path = os.path.join(HERE, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def save_ppm(path, im):
    """Binary PPM (P6) for RGB, PGM (P5) for L: trivial to read from C++."""
    if im.mode not in ("RGB", "L"):
        im = im.convert("RGB")
    im.save(path, format="PPM")


def pillow_rgb(path):
    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(path, rows, width, color_type, bit_depth, extra_chunks=b""):
    """A minimal PNG writer for the layouts Pillow cannot save (16-bit RGB,
    RGBA, LA; 2/4-bit gray). `rows` are already-packed scanlines (bytes)."""
    raw = b"".join(b"\x00" + row for row in rows)
    ihdr = struct.pack(">IIBBBBB", width, len(rows), bit_depth, color_type, 0, 0, 0)
    data = (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + extra_chunks +
            png_chunk(b"IDAT", zlib.compress(raw, 9)) + png_chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(data)


def photos():
    """Real photographs, re-encoded the ways ImageNet files come."""
    astronaut = Image.open(os.path.join(SKIMAGE, "astronaut.png")).convert("RGB")
    chelsea = Image.open(os.path.join(SKIMAGE, "chelsea.png")).convert("RGB")
    coffee = Image.open(os.path.join(SKIMAGE, "coffee.png")).convert("RGB")
    rocket = Image.open(os.path.join(SKIMAGE, "rocket.jpg")).convert("RGB")
    hubble = Image.open(os.path.join(SKIMAGE, "hubble_deep_field.jpg")).convert("RGB")
    brick = Image.open(os.path.join(SKIMAGE, "brick.png")).convert("L")
    astronaut.save(out("photos", "astronaut.jpg"), quality=90, subsampling=2)
    chelsea.save(out("photos", "chelsea.jpg"), quality=85, subsampling=2, progressive=True)
    coffee.save(out("photos", "coffee.jpg"), quality=92, subsampling=0)
    rocket.save(out("photos", "rocket.jpg"), quality=80, subsampling=1)
    hubble.crop((100, 100, 900, 700)).save(out("photos", "hubble.jpg"), quality=75, subsampling=2)
    brick.save(out("photos", "brick_gray.jpg"), quality=90)
    shutil.copyfile(os.path.join(MPL, "grace_hopper.jpg"), out("photos", "grace_hopper.jpg"))
    # An ImageNet-shaped portrait, 375 x 500, with restart markers via cjpeg.
    with tempfile.TemporaryDirectory() as tmp:
        ppm = os.path.join(tmp, "p.ppm")
        coffee.crop((112, 0, 412, 400)).resize((375, 500), Image.BICUBIC).save(ppm)
        subprocess.run(["cjpeg", "-quality", "88", "-restart", "2", "-outfile", out("photos", "coffee_portrait.jpg"), ppm], check=True)
    return chelsea


def decode_set(base):
    """Small files covering every decode path, with Pillow's pixels."""
    small = base.resize((61, 43), Image.LANCZOS)  # odd sizes: partial MCUs
    d = lambda name: out("decode", name)
    small.save(d("s420.jpg"), quality=85, subsampling=2)
    small.save(d("s422.jpg"), quality=85, subsampling=1)
    small.save(d("s444.jpg"), quality=85, subsampling=0)
    small.save(d("progressive.jpg"), quality=85, subsampling=2, progressive=True)
    small.convert("L").save(d("gray.jpg"), quality=85)
    small.convert("CMYK").save(d("cmyk.jpg"), quality=90)
    exif = Image.Exif()
    exif[0x0112] = 6
    small.save(d("exif6.jpg"), quality=85, exif=exif.tobytes())
    exif[0x0112] = 8
    small.save(d("exif8.jpg"), quality=85, exif=exif.tobytes())
    with tempfile.TemporaryDirectory() as tmp:
        ppm = os.path.join(tmp, "s.ppm")
        small.save(ppm)
        subprocess.run(["cjpeg", "-quality", "85", "-arithmetic", "-outfile", d("arithmetic.jpg"), ppm], check=True)
        subprocess.run(["cjpeg", "-quality", "85", "-arithmetic", "-progressive", "-outfile", d("arithmetic_progressive.jpg"), ppm], check=True)
        subprocess.run(["cjpeg", "-quality", "85", "-rgb", "-outfile", d("rgb.jpg"), ppm], check=True)
        subprocess.run(["cjpeg", "-quality", "85", "-restart", "1", "-sample", "2x2", "-outfile", d("restart.jpg"), ppm], check=True)
        make_ycck(small, tmp, d("ycck.jpg"))
    # PNG, including one named like ImageNet's n02105855_2933.JPEG.
    buf = io.BytesIO()
    small.save(buf, format="PNG")
    with open(d("png_named.JPEG"), "wb") as f:
        f.write(buf.getvalue())
    small.convert("P", palette=Image.ADAPTIVE, colors=200).save(d("palette.png"))
    small.convert("P", palette=Image.ADAPTIVE, colors=16).save(d("palette4.png"), bits=4)
    small.convert("L").save(d("gray.png"))
    small.convert("1").save(d("bilevel.png"))
    rgba = small.convert("RGBA")
    rgba.putalpha(Image.linear_gradient("L").resize(small.size))
    rgba.save(d("rgba.png"))
    small.convert("LA").save(d("la.png"))
    arr = np.asarray(small).astype(np.uint16)
    wide = arr * 257 + (np.arange(arr.size, dtype=np.uint16).reshape(arr.shape) % 251)  # low bytes vary
    gray16 = (np.asarray(small.convert("L")).astype(np.uint16) * 3)  # 0..765: Pillow clips > 255
    h, w = arr.shape[:2]
    write_png(d("rgb16.png"), [wide[y].astype(">u2").tobytes() for y in range(h)], w, 2, 16)
    alpha = np.full((h, w, 1), 40000, dtype=np.uint16)
    write_png(d("rgba16.png"), [np.concatenate([wide, alpha], axis=2)[y].astype(">u2").tobytes() for y in range(h)], w, 6, 16)
    write_png(d("la16.png"), [np.stack([wide[..., 1], alpha[..., 0]], axis=2)[y].astype(">u2").tobytes() for y in range(h)], w, 4, 16)
    write_png(d("gray16.png"), [gray16[y].astype(">u2").tobytes() for y in range(h)], w, 0, 16)
    g = np.asarray(small.convert("L"))
    write_png(d("gray4.png"), [pack_bits(g[y] >> 4, 4) for y in range(h)], w, 0, 4)
    write_png(d("gray2.png"), [pack_bits(g[y] >> 6, 2) for y in range(h)], w, 0, 2)
    # EXIF orientation inside PNG (eXIf chunk).
    write_png(d("exif6.png"), [np.asarray(small)[y].tobytes() for y in range(h)], w, 2, 8,
              extra_chunks=png_chunk(b"eXIf", exif_tiff(6)))
    from PIL import ImageOps
    names = sorted(os.listdir(out("decode")))
    for name in names:
        if name.endswith(".ppm"):
            continue
        src = d(name)
        with open(src, "rb") as f:
            im = Image.open(f)
            im.load()
            rgb = im.convert("RGB")
            save_ppm(src + ".ppm", rgb)
            if name.startswith("exif"):
                save_ppm(src + ".oriented.ppm", ImageOps.exif_transpose(im).convert("RGB"))


def exif_tiff(orientation):
    # Little-endian TIFF header, one IFD entry: Orientation SHORT 1.
    return b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 1) + struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack("<I", 0)


def pack_bits(values, bits):
    per = 8 // bits
    values = list(int(v) for v in values)
    while len(values) % per:
        values.append(0)
    outb = bytearray()
    for i in range(0, len(values), per):
        byte = 0
        for v in values[i:i + per]:
            byte = (byte << bits) | v
        outb.append(byte)
    return bytes(outb)


YCCK_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>
/* ycck IN.cmyk W H OUT.jpg: writes a YCCK (Adobe transform 2) JPEG from raw CMYK. */
int main(int argc, char** argv) {
  int w = atoi(argv[2]), h = atoi(argv[3]);
  unsigned char* px = malloc((size_t)w * h * 4);
  FILE* in = fopen(argv[1], "rb"); if (fread(px, 4, (size_t)w * h, in) != (size_t)w * h) return 1; fclose(in);
  struct jpeg_compress_struct c; struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e); jpeg_create_compress(&c);
  FILE* o = fopen(argv[4], "wb"); jpeg_stdio_dest(&c, o);
  c.image_width = w; c.image_height = h; c.input_components = 4; c.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&c); jpeg_set_colorspace(&c, JCS_YCCK); jpeg_set_quality(&c, 90, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) { JSAMPROW r = px + (size_t)c.next_scanline * w * 4; jpeg_write_scanlines(&c, &r, 1); }
  jpeg_finish_compress(&c); fclose(o); return 0;
}
"""


def make_ycck(im, tmp, dest):
    src = os.path.join(tmp, "ycck.c")
    exe = os.path.join(tmp, "ycck")
    with open(src, "w") as f:
        f.write(YCCK_C)
    subprocess.run(["gcc", "-O1", "-o", exe, src, "-ljpeg"], check=True)
    rgb = np.asarray(im).astype(np.int32)
    k = 255 - rgb.max(axis=2)
    cmy = 255 - rgb - k[..., None]
    cmyk = np.concatenate([cmy, k[..., None]], axis=2)
    inverted = (255 - cmyk).astype(np.uint8)  # Adobe writes inverted CMYK
    raw = os.path.join(tmp, "px.cmyk")
    inverted.tofile(raw)
    subprocess.run([exe, raw, str(im.size[0]), str(im.size[1]), dest], check=True)


def bad_files():
    """Broken inputs: each must produce an error naming the file."""
    good = open(out("decode", "s420.jpg"), "rb").read()
    prog = open(out("decode", "progressive.jpg"), "rb").read()
    png = open(out("decode", "gray.png"), "rb").read()
    b = lambda name: out("bad", name)
    open(b("truncated.jpg"), "wb").write(good[: len(good) * 6 // 10])
    open(b("truncated_progressive.jpg"), "wb").write(prog[: len(prog) * 6 // 10])
    sos = good.index(b"\xff\xda")
    mid = sos + (len(good) - sos) // 2
    open(b("corrupt.jpg"), "wb").write(good[:mid] + b"\xff\xd9" + good[mid + 2:])  # EOI inside the scan
    open(b("empty.jpg"), "wb").write(b"")
    open(b("text.jpg"), "wb").write(b"<html><body>404 Not Found</body></html>\n")
    gif = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(gif, format="GIF")
    open(b("gif.jpg"), "wb").write(gif.getvalue())
    open(b("header_only.jpg"), "wb").write(good[:sos])
    open(b("truncated.png"), "wb").write(png[: len(png) * 6 // 10])
    crc = bytearray(png)
    idat = crc.index(b"IDAT")
    crc[idat + 10] ^= 0x55  # inside IDAT data: the CRC no longer matches
    open(b("bad_crc.png"), "wb").write(bytes(crc))


def resample_set(chelsea):
    """Pillow's resize on a small RGB and L image, up and down, odd sizes, boxes, filters."""
    src = chelsea.crop((150, 40, 211, 87))  # 61 x 47
    save_ppm(out("resample", "src.ppm"), src)
    gray = src.convert("L")
    save_ppm(out("resample", "src_gray.pgm"), gray)
    cases = [
        ("bilinear", (30, 23), None), ("bilinear", (61, 47), None), ("bilinear", (122, 94), None),
        ("bilinear", (17, 80), None), ("bilinear", (1, 1), None), ("bilinear", (200, 11), None),
        ("bilinear", (7, 5), None), ("bilinear", (60, 47), None), ("bilinear", (61, 46), None),
        ("bilinear", (32, 24), (3.5, 2.25, 50.75, 40.5)), ("bilinear", (30, 25), (10, 5, 40, 30)),
        ("bilinear", (45, 45), (0.3, 0.7, 61, 47)), ("bilinear", (13, 9), (20, 10, 21, 11)),
        ("bicubic", (30, 23), None), ("bicubic", (95, 71), None), ("lanczos", (25, 41), None),
        ("hamming", (33, 20), None), ("box", (20, 16), None), ("bicubic", (40, 30), (5.5, 3, 55, 44.25)),
    ]
    filters = {"bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC, "lanczos": Image.LANCZOS,
               "hamming": Image.HAMMING, "box": Image.BOX}
    lines = []
    for i, (filt, size, box) in enumerate(cases):
        for kind, im in (("rgb", src), ("gray", gray)):
            if kind == "gray" and i % 3:
                continue
            res = im.resize(size, filters[filt], box=box)
            name = f"{kind}_{i:02d}.{'ppm' if kind == 'rgb' else 'pgm'}"
            save_ppm(out("resample", name), res)
            b = " ".join(repr(float(v)) for v in box) if box else "-"
            lines.append(f"{name} {kind} {filt} {size[0]} {size[1]} {b}")
    with open(out("resample", "cases.txt"), "w") as f:
        f.write("# golden kind filter out_w out_h box(x0 y0 x1 y1 | -): Pillow Image.resize on src.ppm / src_gray.pgm\n")
        f.write("\n".join(lines) + "\n")


def torchvision_goldens():
    import torch
    import torchvision
    import torchvision.transforms as T
    import torchvision.transforms.functional as F
    lines = []
    for name in sorted(os.listdir(out("photos"))):
        img = pillow_rgb(out("photos", name))
        small = T.Compose([T.Resize(64), T.CenterCrop(56)])(img)
        save_ppm(out("val", name + ".64_56.ppm"), small)
        lines.append(f"{name} 64 56 {name}.64_56.ppm")
    for name in ("coffee_portrait.jpg",):
        img = pillow_rgb(out("photos", name))
        full = T.Compose([T.Resize(256), T.CenterCrop(224)])(img)
        save_ppm(out("val", name + ".256_224.ppm"), full)
        lines.append(f"{name} 256 224 {name}.256_224.ppm")
    with open(out("val", "cases.txt"), "w") as f:
        f.write(f"# photo resize crop golden: torchvision {torchvision.__version__} Resize(resize)+CenterCrop(crop) on PIL\n")
        f.write("\n".join(lines) + "\n")
    # ToTensor + Normalize, float32, little-endian CHW.
    img = pillow_rgb(out("photos", "astronaut.jpg"))
    t = T.Compose([T.Resize(64), T.CenterCrop(56), T.ToTensor(),
                   T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])(img)
    t.numpy().astype("<f4").tofile(out("val", "astronaut.jpg.64_56.normalized.f32"))
    t.half().numpy().astype("<f2").tofile(out("val", "astronaut.jpg.64_56.normalized.f16"))
    # Exact train mode: F.resized_crop (+ hflip) with given parameters.
    lines = []
    img = pillow_rgb(out("photos", "rocket.jpg"))
    for k, (i, j, h, w, flip) in enumerate([(10, 20, 300, 400, 0), (0, 0, 427, 640, 1), (100, 250, 57, 91, 0),
                                            (200, 5, 227, 170, 1), (33, 61, 301, 299, 0)]):
        res = F.resized_crop(img, i, j, h, w, [64, 64], T.InterpolationMode.BILINEAR)
        if flip:
            res = F.hflip(res)
        gname = f"rocket_{k}.ppm"
        save_ppm(out("train", gname), res)
        lines.append(f"rocket.jpg {i} {j} {h} {w} {flip} 64 {gname}")
    with open(out("train", "resized_crop_cases.txt"), "w") as f:
        f.write("# photo top left height width flip size golden: torchvision F.resized_crop(+hflip) on PIL\n")
        f.write("\n".join(lines) + "\n")
    rrc_port_check()


class _Uniform:
    """Stands in for torch.empty(1): uniform_(a, b) = a + (b - a) * u with u
    taken from the test's draws, in float64."""

    def __init__(self, shim):
        self.shim = shim

    def uniform_(self, a, b):
        import torch
        a, b = float(a), float(b)
        return torch.tensor([a + (b - a) * self.shim.draw()], dtype=torch.float64)


class _TorchShim:
    def __init__(self, draws):
        import torch
        self.torch = torch
        self.draws = list(draws)
        self.used = 0

    def draw(self):
        v = self.draws[self.used]
        self.used += 1
        return v

    def tensor(self, x):
        return self.torch.tensor(x, dtype=self.torch.float64)

    def log(self, t):
        return self.torch.log(t)

    def exp(self, t):
        return self.torch.exp(t)

    def empty(self, *size):
        return _Uniform(self)

    def randint(self, lo, hi, size):
        n = hi - lo
        k = min(int(self.draw() * n), n - 1)
        return self.torch.tensor([lo + k])


def rrc_port_check():
    """torchvision's own RandomResizedCrop.get_params, fed our uniform draws."""
    import torchvision.transforms.transforms as TT
    rng = np.random.default_rng(2024)
    sizes = [(500, 375), (375, 500), (640, 427), (1000, 50), (50, 1000), (224, 224), (1, 1), (3, 700), (4000, 3000)]
    ranges = [((0.08, 1.0), (3 / 4, 4 / 3)), ((0.9, 1.0), (3 / 4, 4 / 3)), ((0.5, 0.6), (0.2, 5.0)),
              ((0.999, 1.0), (2.0, 3.0))]
    lines = []
    real_torch = TT.torch
    try:
        for (w, h) in sizes:
            for (scale, ratio) in ranges:
                for _ in range(10):
                    draws = [float(x) for x in rng.random(40)]
                    shim = _TorchShim(draws)
                    TT.torch = shim
                    i, j, hh, ww = TT.RandomResizedCrop.get_params(Image.new("L", (w, h)), list(scale), list(ratio))
                    TT.torch = real_torch
                    used = draws[: shim.used]
                    lines.append(" ".join([str(w), str(h)] + [repr(v) for v in scale + ratio] +
                                          [str(i), str(j), str(hh), str(ww), str(len(used))] + [repr(v) for v in used]))
    finally:
        TT.torch = real_torch
    with open(out("train", "rrc_cases.txt"), "w") as f:
        f.write("# width height scale0 scale1 ratio0 ratio1 -> top left height width ndraws draws...: "
                "torchvision RandomResizedCrop.get_params with uniform_(a,b)=a+(b-a)u, randint(0,n)=floor(u n)\n")
        f.write("\n".join(lines) + "\n")


def main():
    chelsea = photos()
    decode_set(chelsea)
    bad_files()
    resample_set(chelsea)
    torchvision_goldens()


if __name__ == "__main__":
    main()
