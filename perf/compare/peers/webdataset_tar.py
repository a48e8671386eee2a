"""WebDataset over `ringfeed pack`'s tar shards, with its WebLoader (torch DataLoader workers)."""
import glob
import os

from . import reusable, shards, tv_transform

NAME = "WebDataset (tar shards)"
PACKAGES = ["webdataset==1.0.2"]
DIFFERS = ("shuffles shard order + a 1000-sample buffer, not a full permutation; each worker batches its "
           "own shards (one partial batch per worker per epoch)")
PIXELS = "yes: PIL decode (decode('pil')) + torchvision ops"


def prepare(ctx):
    shards(ctx)


def make(ctx):
    import webdataset as wds
    urls = sorted(glob.glob(os.path.join(shards(ctx), "*.tar")))
    ds = (wds.WebDataset(urls, shardshuffle=len(urls), seed=ctx.seed).shuffle(1000).decode("pil")
          .to_tuple("jpeg;jpg", "cls").map_tuple(tv_transform(), int).batched(ctx.batch, partial=True))
    return reusable(wds.WebLoader(ds, batch_size=None, num_workers=ctx.threads, persistent_workers=True))
