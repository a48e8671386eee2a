"""Contenders of compare_peers.py: one small module per data loader.

Each module says
  NAME      the row's name
  PACKAGES  its pip pins, installed on top of BASE into the peers' venv
  DIFFERS   how it departs from the recipe (RECIPE below), "" if not at all
  PIXELS    whether its pixels can equal torchvision's, and why
  SKIP      (optional) why it cannot be measured at all, checked first
  skip(ctx) (optional) the same, found out in the venv (None: it can run)
and defines
  prepare(ctx)  builds its own format from the ImageFolder once, outside the timing (optional)
  make(ctx)     returns epoch(e) -> an iterable of (x, y) batches: x float32 NCHW, y int labels

ctx has source (the ImageFolder), work (where formats are built), threads,
batch, seed and cli (the ringfeed binary).
"""
import io
import os
import subprocess

RECIPE = "RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize(ImageNet) -> float32 NCHW, batch 64"
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
# The venv every peer runs in: this torch and torchvision (and numpy, Pillow) for all.
BASE = ["torch==2.14.1", "torchvision==0.29.1", "numpy==2.1.3", "pillow==13.0.0"]
ORDER = ["ringfeed_folder", "ringfeed_shards", "ringfeed_exact", "ringfeed_pixel_cache", "torch_dataloader",
         "spdl_pipeline", "spdl_io", "dali_cpu", "ffcv_beton", "webdataset_tar", "mosaic_mds", "litdata_opt",
         "torchdata_nodes"]


def tv_transform():
    """The recipe, as torchvision (v1) objects."""
    import torchvision.transforms as T
    return T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])


def pil_rgb(data):
    """JPEG bytes -> an RGB PIL image, as ImageFolder's loader opens a file."""
    from PIL import Image
    img = Image.open(io.BytesIO(data))
    return img.convert("RGB")


def samples(source):
    """ImageFolder's (path, label) list, in its order, without decoding anything."""
    import torchvision
    return torchvision.datasets.ImageFolder(source).samples


def shards(ctx):
    """`ringfeed pack`'s tar shards of the source (16 MiB each, so every worker gets several)."""
    out = os.path.join(ctx.work, "shards")
    if not os.path.exists(os.path.join(out, "classes.txt")):
        subprocess.run([ctx.cli, "pack", ctx.source, out, "--shard-mb", "16", "--seed", "1"], check=True,
                       stdout=subprocess.DEVNULL)
    return out


def built(path):
    """Build `path` as path.tmp, renamed when done, so a killed build is redone."""
    import shutil
    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    return tmp


def reusable(make_epoch_loader):
    """epoch(e) for a loader that runs one epoch per `for` (DataLoader and alike)."""
    return lambda e: make_epoch_loader
