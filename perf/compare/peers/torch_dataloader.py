"""torch's DataLoader over torchvision's ImageFolder: the recipe itself."""
from . import reusable, tv_transform

NAME = "torch DataLoader"
PACKAGES = []
DIFFERS = ""
PIXELS = "yes: it is the reference (PIL decode + torchvision ops)"


def make(ctx):
    import torch
    import torchvision
    ds = torchvision.datasets.ImageFolder(ctx.source, transform=tv_transform())
    return reusable(torch.utils.data.DataLoader(ds, batch_size=ctx.batch, shuffle=True, num_workers=ctx.threads,
                                                persistent_workers=True))
