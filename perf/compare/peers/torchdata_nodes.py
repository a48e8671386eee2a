"""torchdata.nodes: a sampler -> a thread-based ParallelMapper over ImageFolder's decode + recipe -> Batcher."""
from . import tv_transform

NAME = "torchdata nodes (threads)"
PACKAGES = ["torchdata==0.11.0"]
DIFFERS = "threads in one process (method='thread'), so the GIL-held parts of PIL/torchvision serialize"
PIXELS = "yes: PIL decode + torchvision ops"


def make(ctx):
    import torch
    import torchvision
    from torch.utils.data import RandomSampler, default_collate
    from torchdata.nodes import Batcher, Loader, Mapper, ParallelMapper, Prefetcher, SamplerWrapper
    ds = torchvision.datasets.ImageFolder(ctx.source, transform=tv_transform())
    node = SamplerWrapper(RandomSampler(ds, generator=torch.Generator().manual_seed(ctx.seed)))
    node = ParallelMapper(node, map_fn=ds.__getitem__, num_workers=ctx.threads, method="thread")
    node = Prefetcher(Mapper(Batcher(node, batch_size=ctx.batch, drop_last=False), default_collate), 2)
    loader = Loader(node)
    return lambda e: loader
