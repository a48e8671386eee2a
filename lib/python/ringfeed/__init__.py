"""ringfeed: keeps GPUs fed. Reads, decodes and augments images in C++
threads of this process (io_uring, libjpeg-turbo, pinned batches) and hands
them to PyTorch as tensors.

    import ringfeed
    loader = ringfeed.Loader("/data/imagenet/train", batch_size=256, pipeline="train")
    for images, labels in loader:      # one epoch per `for`
        ...

or, keeping a torch script as it is but for the import:

    from ringfeed import DataLoader    # was: from torch.utils.data import DataLoader

Building blocks for other loaders: read_files, decode, ImageFolder.
torch is imported only by what produces tensors: a Loader when constructed,
decode() when called.
"""
from ._ringfeed import __version__
from .blocks import ImageFolder, decode, read_files
from .loader import Batch, Loader
from .dataloader import DataLoader
from . import transforms

__all__ = ["Loader", "DataLoader", "Batch", "ImageFolder", "read_files", "decode", "transforms", "__version__"]
