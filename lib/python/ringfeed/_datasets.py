"""Which datasets ringfeed.DataLoader reads itself, and how: the files of a
torchvision folder dataset (its `samples` list), or the images a CIFAR or
MNIST dataset holds in memory (read in place from its array). Anything else
gets a reason, which the DataLoader gives when it falls back to torch's."""
from __future__ import annotations

import os
from typing import Any, NamedTuple, Optional

from .loader import _torch


class Native(NamedTuple):
    source: str                 # names the data in messages (a root directory, "CIFAR10(root)")
    spec: str                   # the transform, translated
    samples: Optional[tuple]    # (paths as bytes, labels): files
    pixels: Optional[tuple]     # (uint8 array [N, H, W(, 3)], labels): images in memory
    index_map: Optional[list]   # a Subset of images in memory: its indices into the array
    channels: Optional[int]     # L images: the output keeps this many channels (1)


# Ops that treat an L image's one channel as they treat each channel of its
# RGB replicate (v, v, v): an L dataset runs as RGB, and the output keeps
# channel 0. Colour ops, Grayscale and containers are left to torch.
_L_OPS = frozenset(("Resize", "CenterCrop", "Pad", "RandomCrop", "RandomResizedCrop", "RandomHorizontalFlip",
                    "RandomVerticalFlip", "ToTensor", "PILToTensor", "ConvertImageDtype", "Normalize"))


def _subsets(dataset):
    """The Subsets `dataset` is made of, outermost first, and the dataset
    under them."""
    torch = _torch()
    levels = []
    while type(dataset) is torch.utils.data.Subset:  # a subclass may have its own __getitem__
        levels.append(dataset)
        dataset = dataset.dataset
    return levels, dataset


def _unwrap_subsets(dataset):
    """The dataset under any Subsets, and the indices into it they choose
    (None: all of them, in order)."""
    levels, dataset = _subsets(dataset)
    indices = None
    for subset in levels:
        chosen = [int(i) for i in subset.indices]
        indices = chosen if indices is None else [chosen[i] for i in indices]
    return dataset, indices


def _translate(name, transform, source_size=None):
    """(spec, None) or (None, reason); source_size: (height, width) of
    every image (in memory), None when each has its own."""
    if transform is None:
        return None, f"{name} has no transform: its samples are PIL images, which default_collate cannot batch"
    from .transforms import output_of, to_spec
    try:
        kind, _, height, _, _ = output_of(transform, source_size)  # the one parse here
        spec = to_spec(transform, check=False)
    except ValueError as e:
        return None, f"{name}'s transform: {e}"
    if kind == "image":
        return None, f"{name}'s transform ends with a PIL image, which default_collate cannot batch (add ToTensor)"
    if height is None:
        return None, f"{name}'s transform gives each image its own size (no crop or Resize((h, w)) at the end)"
    return spec, None


def _in_memory(dataset, name, indices):
    """(Native, None) for CIFAR10/100 and the MNIST family, (None, reason)
    for another in-memory dataset, (None, None) for a dataset of files."""
    try:
        from torchvision.datasets import CIFAR10, MNIST
    except ImportError:
        return None, None
    if isinstance(dataset, CIFAR10):
        if type(dataset).__getitem__ is not CIFAR10.__getitem__:
            return None, f"{name} overrides CIFAR10.__getitem__"
        array, labels, channels = dataset.data, [int(t) for t in dataset.targets], None
    elif isinstance(dataset, MNIST):
        if type(dataset).__getitem__ is not MNIST.__getitem__:
            return None, f"{name} overrides MNIST.__getitem__ (its targets are not one class each)"
        array, labels, channels = dataset.data, [int(t) for t in dataset.targets], 1
        from .transforms import _flatten
        for position, op in enumerate(_flatten(dataset.transform) if dataset.transform is not None else []):
            if type(op).__name__ not in _L_OPS:
                return None, (f"{name} holds L (grayscale) images, and transform {position} "
                              f"({type(op).__name__}) is not one ringfeed runs on them "
                              f"({', '.join(sorted(_L_OPS))})")
    else:
        return None, None
    if getattr(dataset, "target_transform", None) is not None:
        return None, f"{name} has a target_transform, which ringfeed does not run"
    import numpy
    array = array.numpy() if hasattr(array, "numpy") else numpy.asarray(array)
    shape_ok = array.dtype == numpy.uint8 and (array.ndim == 3 or (array.ndim == 4 and array.shape[3] == 3))
    if not shape_ok or len(labels) != array.shape[0] or array.shape[0] == 0:
        return None, f"{name}.data is {array.dtype}{list(array.shape)}, not uint8 [N, H, W] or [N, H, W, 3]"
    spec, reason = _translate(name, dataset.transform, tuple(array.shape[1:3]))
    if reason is not None:
        return None, reason
    array = numpy.ascontiguousarray(array)  # the array itself when it is contiguous: read in place
    root = os.fspath(getattr(dataset, "root", "")) if isinstance(getattr(dataset, "root", None),
                                                                  (str, os.PathLike)) else ""
    if indices is not None:  # Python's negative indexing, as the Subset's own __getitem__ would do
        indices = [i % array.shape[0] if -array.shape[0] <= i < 0 else i for i in indices]
    return Native(f"{name}({root})", spec, None, (array, labels), indices, channels), None


def native_source(dataset: Any):
    """(None, Native) for a dataset ringfeed reads itself, else (reason, None)."""
    dataset, indices = _unwrap_subsets(dataset)
    name = type(dataset).__name__
    if getattr(type(dataset), "__getitems__", None) is not None:  # torch >= 2.0 fetches a batch with it
        return f"{name} has its own __getitems__ (a batch fetch torch's DataLoader calls)", None
    try:
        from torchvision.datasets import DatasetFolder
        from torchvision.datasets.folder import default_loader, pil_loader
    except ImportError:
        return f"{name}: torchvision is not installed, and only its datasets run natively", None
    found, reason = _in_memory(dataset, name, indices)
    if found is not None or reason is not None:
        return reason, found
    samples = getattr(dataset, "samples", None)
    if samples is None:
        samples = getattr(dataset, "imgs", None)
    if not isinstance(samples, list):
        return f"{name} has its own __getitem__ and no `samples` list of (path, class) to read", None
    # What ringfeed does is what DatasetFolder.__getitem__ does: a class of
    # its own with a samples list may return anything from its own.
    if type(dataset).__getitem__ is not DatasetFolder.__getitem__:
        if isinstance(dataset, DatasetFolder):
            return f"{name} overrides DatasetFolder.__getitem__", None
        return (f"{name} has its own __getitem__ (not torchvision's DatasetFolder's), which ringfeed "
                "would not run"), None
    if getattr(dataset, "loader", None) not in (default_loader, pil_loader):
        return f"{name} reads its files with its own loader function, not torchvision's default_loader", None
    if getattr(dataset, "target_transform", None) is not None:
        return f"{name} has a target_transform, which ringfeed does not run", None
    spec, reason = _translate(name, getattr(dataset, "transform", None))
    if reason is not None:
        return reason, None
    paths, labels = [], []
    for i in (range(len(samples)) if indices is None else indices):
        path, label = samples[i]
        if isinstance(label, bool) or not isinstance(label, int):
            return f"{name}.samples[{i}] has the target {label!r}, not a class index", None
        paths.append(os.fsencode(path))
        labels.append(label)
    if not paths:
        return f"{name} holds no samples", None
    root = getattr(dataset, "root", None)
    root = os.fspath(root) if isinstance(root, (str, os.PathLike)) else os.path.dirname(os.fsdecode(paths[0]))
    return None, Native(root, spec, (paths, labels), None, None, None)


def _content(values):
    """A hash of a list of samples, labels or indices (a list, tuple, numpy
    array or tensor): an edit in place changes it. About 0.1 s for
    ImageNet's 1.28 million samples (0.17 s the first time), once per iteration."""
    if isinstance(values, (list, tuple)):
        try:
            return hash(tuple(values))
        except TypeError:  # samples as lists ([path, class], from JSON)
            return hash(tuple(tuple(v) if isinstance(v, list) else v for v in values))
    if hasattr(values, "numpy"):  # a tensor
        values = values.numpy()
    tobytes = getattr(values, "tobytes", None)
    return hash(tobytes()) if tobytes is not None else id(values)


def fingerprint(dataset):
    """What native_source read that a training script may change between
    iterations (progressive resizing sets a new transform, a relabelling
    edits the samples or targets in place): the transform's translation,
    the samples (or targets) and each Subset's indices by content, and the
    image array (in memory) by identity."""
    subsets, dataset = _subsets(dataset)
    # each Subset's index list, not composed (iter() runs this)
    levels = tuple(_content(subset.indices) for subset in subsets)
    transform = getattr(dataset, "transform", None)
    try:
        from .transforms import to_spec
        # translated, not parsed: a changed spec is parsed by the new Loader
        spec = to_spec(transform, check=False) if transform is not None else None
    except ValueError as e:
        spec = f"untranslatable: {e}"
    if hasattr(dataset, "data"):  # in memory: the array by identity, its labels by content
        held = getattr(dataset, "data", None)
        labels = getattr(dataset, "targets", None)
        return spec, id(held), None if labels is None else _content(labels), levels
    held = getattr(dataset, "samples", None)
    if held is None:
        held = getattr(dataset, "imgs", None)
    return spec, None, None if held is None else _content(held), levels
