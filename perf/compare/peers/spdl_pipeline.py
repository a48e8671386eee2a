"""SPDL's DataLoader (threads in one process) with PIL decode + torchvision ops per sample.

SPDL's own image decode (spdl.io, FFmpeg) cannot load here: see spdl_io.py.
"""
from . import tv_transform

NAME = "SPDL (threads, PIL decode)"
PACKAGES = ["spdl==0.8.0"]
DIFFERS = ("spdl.dataloader.DataLoader's thread pool runs ImageFolder's PIL decode + the torchvision recipe, "
           "torch.stack batches; not spdl.io's FFmpeg decode (see the spdl.io row)")
PIXELS = "yes: PIL decode + torchvision ops, as the reference"


def make(ctx):
    import torch
    import torchvision
    from spdl.dataloader import DataLoader
    ds = torchvision.datasets.ImageFolder(ctx.source, transform=tv_transform())

    def collate(items):
        return torch.stack([x for x, _ in items]), torch.tensor([y for _, y in items])

    def epoch(e):
        order = torch.randperm(len(ds), generator=torch.Generator().manual_seed(ctx.seed + e)).tolist()
        return DataLoader(order, preprocessor=ds.__getitem__, batch_size=ctx.batch, aggregator=collate,
                          num_threads=ctx.threads, buffer_size=3)
    return epoch
