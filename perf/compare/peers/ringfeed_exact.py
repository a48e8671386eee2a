"""ringfeed.Loader on the ImageFolder in exact mode: torchvision's pixels."""
from . import reusable
from .ringfeed_folder import loader

NAME = "ringfeed (folder, exact)"
PACKAGES = []
DIFFERS = "none (exact=True: full-size decode and torchvision's resampling)"
PIXELS = "yes: exact=True is pixel-equal to torchvision (tests/python/test_transforms.py checks torch.equal)"


def make(ctx):
    return reusable(loader(ctx.source, ctx, exact=True))
