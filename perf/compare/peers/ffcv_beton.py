"""FFCV: its .beton writer and ImageNet train pipeline (CPU, no ToDevice).

ffcv 1.0.2 (its latest) is an sdist only: pip compiles libffcv.cpp, which
pkg-config must find opencv4 and libturbojpeg for. DEBIAN gives it Debian
12's OpenCV 4.6 (libopencv-dev) and libjpeg-turbo 2.1; it builds and runs
against them, and its Python side runs with BASE's numpy 2.1, so the pin
stays 1.0.2. Its dependencies are unpinned in its own metadata: PACKAGES pins
the releases pip resolved them to here (numba 0.68.1, opencv-python
5.0.0.93, ...), so a fresh machine gets the same ones.
"""
import os

from . import MEAN, STD

NAME = "FFCV (.beton)"
PACKAGES = ["ffcv==1.0.2", "numba==0.68.1", "llvmlite==0.50.0", "opencv-python==5.0.0.93", "assertpy==1.1",
            "fastargs==1.2.0", "terminaltables==3.1.10", "pytorch-pfn-extras==0.9.0", "psutil==7.2.2",
            "tqdm==4.70.1"]
# ffcv ships only an sdist: pip compiles libffcv.cpp against `pkg-config opencv4` and libturbojpeg.
DEBIAN = ["g++", "pkg-config", "python3-dev", "libturbojpeg0-dev", "libopencv-dev"]
DIFFERS = ("FFCV's writer takes pixels: JPEGs decoded and re-encoded at quality 95; RandomResizedCropRGBImageDecoder "
           "(libjpeg-turbo + OpenCV resize); normalize in torch after ToTorchImage")
PIXELS = "no: OpenCV's resize (INTER_AREA) differs from PIL's"


def prepare(ctx):
    from ffcv.fields import IntField, RGBImageField
    from ffcv.writer import DatasetWriter
    out = os.path.join(ctx.work, "ffcv.beton")
    if os.path.exists(out):
        return
    import torchvision
    ds = torchvision.datasets.ImageFolder(ctx.source)
    tmp = out + ".tmp"
    DatasetWriter(tmp, {"image": RGBImageField(write_mode="jpg", jpeg_quality=95), "label": IntField()},
                  num_workers=ctx.threads).from_indexed_dataset(ds)
    os.rename(tmp, out)


def make(ctx):
    import torch
    from ffcv.fields.basics import IntDecoder
    from ffcv.fields.rgb_image import RandomResizedCropRGBImageDecoder
    from ffcv.loader import Loader, OrderOption
    from ffcv.transforms import RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage
    mean = torch.tensor(MEAN).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD).view(1, 3, 1, 1) * 255
    loader = Loader(os.path.join(ctx.work, "ffcv.beton"), batch_size=ctx.batch, num_workers=ctx.threads,
                    order=OrderOption.RANDOM, seed=ctx.seed, drop_last=False,
                    pipelines={"image": [RandomResizedCropRGBImageDecoder((224, 224)), RandomHorizontalFlip(),
                                         ToTensor(), ToTorchImage()],
                               "label": [IntDecoder(), ToTensor(), Squeeze()]})

    def epoch(e):
        for x, y in loader:
            yield (x.float() - mean) / std, y
    return epoch
