"""MosaicML Streaming: MDS shards (the JPEG bytes, a label) read by StreamingDataset, torch DataLoader workers."""
import os

from . import built, pil_rgb, samples, tv_transform

NAME = "MosaicML Streaming (MDS)"
PACKAGES = ["mosaicml-streaming==0.13.0"]
DIFFERS = "MDS 'bytes' column holds each file's JPEG bytes; Streaming's own shuffle (py1e) over its shards"
PIXELS = "yes: PIL decode + torchvision ops"


def out(ctx):
    return os.path.join(ctx.work, "mds")


def prepare(ctx):
    from streaming import MDSWriter
    if os.path.exists(os.path.join(out(ctx), "index.json")):
        return
    tmp = built(out(ctx))
    with MDSWriter(out=tmp, columns={"image": "bytes", "label": "int"}, size_limit=1 << 26) as w:
        for path, label in samples(ctx.source):
            with open(path, "rb") as f:
                w.write({"image": f.read(), "label": label})
    os.rename(tmp, out(ctx))


def make(ctx):
    import torch
    from streaming import StreamingDataset
    from streaming.base.util import clean_stale_shared_memory
    clean_stale_shared_memory()
    t = tv_transform()

    class Images(StreamingDataset):
        def __getitem__(self, i):
            s = super().__getitem__(i)
            return t(pil_rgb(s["image"])), s["label"]

    ds = Images(local=out(ctx), shuffle=True, shuffle_seed=ctx.seed, batch_size=ctx.batch)
    dl = torch.utils.data.DataLoader(ds, batch_size=ctx.batch, num_workers=ctx.threads, persistent_workers=True)
    return lambda e: dl
