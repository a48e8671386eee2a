"""ringfeed.Loader on `ringfeed pack`'s tar shards (the ones WebDataset reads), fast mode."""
from . import reusable, shards
from .ringfeed_folder import loader

NAME = "ringfeed (tar shards)"
PACKAGES = []
DIFFERS = "fast mode, as ringfeed (folder); reads the 14 tar shards WebDataset reads"
PIXELS = "not in fast mode (measured); exact=True: yes"


def prepare(ctx):
    shards(ctx)


def make(ctx):
    return reusable(loader(shards(ctx), ctx))
