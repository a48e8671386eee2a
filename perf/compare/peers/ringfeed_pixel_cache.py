"""ringfeed.Loader on the ImageFolder with cache="pixels" (issue 40): the
decoded images kept on local disk by `ringfeed cache build` before the
rounds (outside the timing), so every timed epoch reads them instead of
decoding. Batches are exact mode's (torchvision's pixels)."""
import os
import shutil
import subprocess

from . import reusable, tv_transform

NAME = "ringfeed (pixel cache)"
PACKAGES = []
DIFFERS = "none (batches byte-identical to exact=True); the decode happens once, before the rounds"
PIXELS = "yes: equal to exact=True (tests/python/test_pixel_cache.py checks torch.equal with torch's DataLoader)"


def cache_dir(ctx):
    return os.path.join(ctx.work, "pixel-cache")


def prepare(ctx):
    shutil.rmtree(cache_dir(ctx), ignore_errors=True)
    subprocess.run([ctx.cli, "cache", "build", ctx.source, "--cache-dir", cache_dir(ctx), "--threads",
                    str(ctx.threads)], check=True, stdout=subprocess.DEVNULL)


def make(ctx):
    import ringfeed
    return reusable(ringfeed.Loader(ctx.source, batch_size=ctx.batch, transform=tv_transform(),
                                    threads=ctx.threads, seed=ctx.seed, cache_dir=cache_dir(ctx), cache="pixels"))
