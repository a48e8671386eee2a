"""ringfeed.Loader on the ImageFolder, the recipe given as torchvision objects (fast mode)."""
from . import reusable, tv_transform

NAME = "ringfeed (folder)"
PACKAGES = []
DIFFERS = "fast mode: decodes at a reduced JPEG scale when the crop allows, its own resampling"
PIXELS = "not in fast mode (measured); exact=True: yes (see the ringfeed exact row)"


def loader(source, ctx, exact=False):
    import ringfeed
    return ringfeed.Loader(source, batch_size=ctx.batch, transform=tv_transform(), threads=ctx.threads,
                           exact=exact, seed=ctx.seed)


def make(ctx):
    return reusable(loader(ctx.source, ctx))
