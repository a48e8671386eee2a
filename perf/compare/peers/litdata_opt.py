"""LitData: litdata.optimize's chunks (the JPEG bytes, a label), its StreamingDataset and StreamingDataLoader."""
import os

from . import pil_rgb, samples, tv_transform

NAME = "LitData (optimized)"
PACKAGES = ["litdata==0.2.76"]
DIFFERS = "chunks of each file's JPEG bytes (litdata.optimize); LitData's shuffle (chunk order + within chunks)"
PIXELS = "yes: PIL decode + torchvision ops"


def out(ctx):
    return os.path.join(ctx.work, "litdata")


def record(item):
    path, label = item
    with open(path, "rb") as f:
        return {"image": f.read(), "label": label}


def prepare(ctx):
    import shutil
    import litdata
    if os.path.exists(os.path.join(out(ctx), "index.json")):
        return
    tmp = out(ctx) + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    litdata.optimize(fn=record, inputs=samples(ctx.source), output_dir=tmp, chunk_bytes="64MB", num_workers=1,
                     mode="overwrite")
    os.rename(tmp, out(ctx))


def make(ctx):
    import litdata
    t = tv_transform()

    class Images(litdata.StreamingDataset):
        def __getitem__(self, i):
            s = super().__getitem__(i)
            return t(pil_rgb(s["image"])), s["label"]

    ds = Images(out(ctx), shuffle=True, seed=ctx.seed)
    dl = litdata.StreamingDataLoader(ds, batch_size=ctx.batch, num_workers=ctx.threads, persistent_workers=True)
    return lambda e: dl
