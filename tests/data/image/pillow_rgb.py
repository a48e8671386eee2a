#!/usr/bin/python3
"""Pillow's Image.open(f).convert("RGB") goldens for a committed folder of inputs.

A golden folder (webp/, tiff/, bmp_pnm/, orientation/) holds input files,
NAME.ppm beside each input NAME (Pillow's convert("RGB") as a binary P6,
maxval 255) and manifest.txt: "# pillow X.Y.Z ..." and then one input name
per line. A folder may also hold NAME.oriented.ppm for every input:
ImageOps.exif_transpose of that convert("RGB").

As a module, the generators (make_webp.py, make_tiff.py, make_bmp_pnm.py)
use clear(), write_golden() and write_manifest().

As a script, the tests' stale-golden check:

    pillow_rgb.py DIR OUTDIR

writes OUTDIR/NAME.ppm, the live Pillow's convert("RGB") of every input
DIR/manifest.txt lists, for the test to compare with DIR/NAME.ppm (and
OUTDIR/NAME.oriented.ppm where DIR has NAME.oriented.ppm). An input
Pillow refuses gets no output (the test reports it). Exits 3 when this
interpreter has no Pillow (or no WebP in it for a WebP folder) and 4 when its
Pillow is not the release the goldens were made with (another release may
decode differently: that is not a stale golden); the reason is on stderr.
Needs only Pillow, not numpy.
"""
import os
import sys

MANIFEST = "manifest.txt"


def ppm_bytes(rgb):
    """Binary P6, maxval 255: what tests/support/image_test_data.hpp reads."""
    return b"P6\n%d %d\n255\n" % rgb.size + rgb.tobytes()


def pillow_ppm(path, oriented=False):
    from PIL import Image, ImageOps

    with open(path, "rb") as f:
        with Image.open(f) as im:
            rgb = im.convert("RGB")
            return ppm_bytes(ImageOps.exif_transpose(rgb) if oriented else rgb)


def read_manifest(folder):
    """(pillow version, [names]) of folder/manifest.txt."""
    version = None
    names = []
    with open(os.path.join(folder, MANIFEST)) as f:
        for line in f:
            line = line.strip()
            if line.startswith("# pillow "):
                version = line.split()[2].rstrip(":")
            elif line and not line.startswith("#"):
                names.append(line)
    return version, names


def clear(folder):
    """Removes the set a previous run listed in folder/manifest.txt, so that a
    renamed or dropped variant leaves nothing stale behind."""
    os.makedirs(folder, exist_ok=True)
    if not os.path.exists(os.path.join(folder, MANIFEST)):
        return
    for name in read_manifest(folder)[1]:
        for path in (os.path.join(folder, name), os.path.join(folder, name + ".ppm")):
            if os.path.exists(path):
                os.remove(path)
    os.remove(os.path.join(folder, MANIFEST))


def write_golden(folder, name):
    """Writes folder/NAME.ppm from folder/NAME; raises when Pillow cannot."""
    data = pillow_ppm(os.path.join(folder, name))
    with open(os.path.join(folder, name + ".ppm"), "wb") as f:
        f.write(data)


def write_manifest(folder, names, made_by):
    import PIL

    with open(os.path.join(folder, MANIFEST), "w") as f:
        f.write(f"# pillow {PIL.__version__}: NAME.ppm is Image.open(NAME).convert('RGB'); "
                f"written by tests/data/image/{made_by}\n")
        f.write("".join(n + "\n" for n in sorted(names)))


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    folder, outdir = argv[1], argv[2]
    try:
        import PIL
        from PIL import features
    except ImportError as e:
        print(f"{sys.executable} has no Pillow ({e})", file=sys.stderr)
        return 3
    version, names = read_manifest(folder)
    if version is None or PIL.__version__.split(".")[:2] != version.split(".")[:2]:
        print(f"the goldens are Pillow {version}'s; {sys.executable} has Pillow {PIL.__version__}",
              file=sys.stderr)
        return 4
    if any(n.endswith(".webp") for n in names) and not (features.check("webp") and features.check("webp_anim")):
        print(f"{sys.executable}'s Pillow {PIL.__version__} lacks WebP (or WebP animation)", file=sys.stderr)
        return 3
    os.makedirs(outdir, exist_ok=True)
    for name in names:
        try:
            data = pillow_ppm(os.path.join(folder, name))
        except Exception as e:  # noqa: BLE001 - the test reports the missing output
            print("pillow-refuses", name, repr(e), file=sys.stderr)
            continue
        with open(os.path.join(outdir, name + ".ppm"), "wb") as f:
            f.write(data)
        if os.path.exists(os.path.join(folder, name + ".oriented.ppm")):
            with open(os.path.join(outdir, name + ".oriented.ppm"), "wb") as f:
                f.write(pillow_ppm(os.path.join(folder, name), oriented=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
