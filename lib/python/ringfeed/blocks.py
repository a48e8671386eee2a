"""Building blocks for other loaders: read files, decode one image, list an
ImageFolder."""
from __future__ import annotations

import os

from . import _ringfeed
from ._checks import choice, int_arg
from .loader import _from_dlpack

__all__ = ["read_files", "decode", "ImageFolder"]


def read_files(paths, io_depth=0, direct=False):
    """Reads whole files (io_uring, up to io_depth at once; 0: the storage's
    depth) with the GIL released. `paths`: an iterable of str, bytes or
    os.PathLike. Returns one read-only memoryview per path, in order. A file
    that cannot be read raises OSError (FileNotFoundError, ...) naming it."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        raise TypeError(f"read_files takes a list of paths, not one path: {paths!r}")
    # File names are bytes: os.fsencode passes any name (str from os.fsdecode
    # included, lone surrogates and all) to C++ unchanged.
    return _ringfeed.read_files([os.fsencode(p) for p in paths], io_depth, direct)


def decode(data, pipeline=None, size=224, exact=False, seed=0, epoch=0, index=0, name="<bytes>",
           max_pixels=_ringfeed.DEFAULT_MAX_PIXELS, transform=None):
    """Decodes one encoded image (JPEG, PNG, WebP, TIFF, BMP or PBM/PGM/PPM bytes;
    any bytes-like object)
    into a uint8 HWC torch.Tensor, with the GIL released.

    pipeline=None: the whole image, equal to PIL.Image.open(f).convert("RGB").
    "train" / "val": the loader's transform for that sample, with the random
    choices ringfeed.Loader makes for sample `index` of `epoch` under `seed`
    (the same pixels as a Loader(output="uint8") batch slot).
    An image whose header declares more than `max_pixels` pixels (default
    Pillow's limit, 178,956,970) is refused before memory is allocated.
    transform=T (a ringfeed.transforms or torchvision transform, a Compose, a
    list or a spec string) instead of pipeline: exactly what ringfeed.Loader
    (transform=T) puts in that sample's slot — uint8 HWC for a recipe ending
    with an image, uint8 CHW after PILToTensor, float32 CHW after ToTensor —
    for an output of any size.
    Errors (ValueError for a bad option, RuntimeError for a bad image) name
    `name` and the reason."""
    spec = ""
    if transform is not None:  # with a pipeline too: refused by C++ (check_one_recipe)
        from .transforms import to_spec
        spec = to_spec(transform)
    choice("pipeline", pipeline, (None, "train", "val"))
    int_arg("size", size, 1)
    for option, value in (("seed", seed), ("epoch", epoch), ("index", index)):
        int_arg(option, value)
    int_arg("max_pixels", max_pixels, 1)
    capsule = _ringfeed._decode(data, pipeline or "", size, bool(exact), seed, epoch, index, str(name),
                                max_pixels, spec)
    return _from_dlpack(capsule)


class ImageFolder:
    """torchvision.datasets.ImageFolder's listing, scanned in C++: the same
    `classes`, `class_to_idx`, `samples` (and `targets`, `imgs`) in the same
    order. include_hidden=True (the default) keeps names starting with '.'
    as torchvision 0.14 does; ringfeed.Loader leaves them out."""

    def __init__(self, root, include_hidden=True):
        self.root = os.fspath(root)
        classes, samples = _ringfeed._scan_image_folder(os.fsencode(self.root), bool(include_hidden))
        self.classes = list(classes)
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self.samples = [(path, int(label)) for path, label in samples]
        self.targets = [label for _, label in self.samples]
        self.imgs = self.samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        return self.samples[i]

    def __repr__(self):
        return f"ringfeed.ImageFolder({self.root!r}: {len(self.samples)} samples, {len(self.classes)} classes)"
