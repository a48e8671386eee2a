"""FFCV: its .beton writer and ImageNet train pipeline (CPU, no ToDevice).

Untested here: ffcv does not install on this machine (see the table).
"""
import os

from . import MEAN, STD

NAME = "FFCV (.beton)"
PACKAGES = ["ffcv==1.0.2"]
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
                    order=OrderOption.RANDOM, seed=ctx.seed,
                    pipelines={"image": [RandomResizedCropRGBImageDecoder((224, 224)), RandomHorizontalFlip(),
                                         ToTensor(), ToTorchImage()],
                               "label": [IntDecoder(), ToTensor(), Squeeze()]})

    def epoch(e):
        for x, y in loader:
            yield (x.float() - mean) / std, y
    return epoch
