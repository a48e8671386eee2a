#!/usr/bin/python3
"""Keeps torch's DataLoader, reads and decodes with ringfeed's building blocks.

    build/default/bin/ringfeed gen /tmp/ds --images 2000 --classes 10 --seed 1
    PYTHONPATH=build/default/python /usr/bin/python3 apps/examples/dataset_read_files.py /tmp/ds
        [--batch 64] [--size 224] [--workers 0,2] [--epochs 1]

ReadFilesDataset is a map-style torch.utils.data.Dataset whose batch fetch
makes ONE ringfeed.read_files call for the whole batch (all files read
concurrently, io_uring, GIL released), then ringfeed.decode(pipeline="train")
per file (RandomResizedCrop + flip in C++, GIL released, uint8 HWC), then
stacks, converts to float and normalizes: float32 [B,3,H,W] as torchvision's
ToTensor + Normalize give.

Batch fetches, two ways:
  - any torch (1.13 here): DataLoader(ds, batch_size=None,
    sampler=BatchSampler(RandomSampler(ds), batch, drop_last=False)).
    With batch_size=None the DataLoader does not collate: each list of
    indices from the BatchSampler goes to ds[indices] and comes back as the
    batch. This script uses this form.
  - torch >= 2.0 also calls __getitems__(indices) under a plain
    DataLoader(ds, batch_size=B, shuffle=True); it returns the list of
    (image, label) samples the default collate stacks (one more copy).

The crops depend on (seed, epoch, sample index), as ringfeed.Loader's: call
set_epoch(e) before each epoch. Workers are started per epoch (no
persistent_workers), so they see the new epoch. ringfeed is fork-safe:
read_files made its threads again in each worker.

Prints images/s for each --workers value (the consumer touches every batch).
"""
import argparse
import os
import time

import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

import train_common

ringfeed = train_common.import_ringfeed()

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


class ReadFilesDataset(Dataset):
    def __init__(self, root, size=224, seed=0, io_depth=0):
        folder = ringfeed.ImageFolder(root)  # torchvision.datasets.ImageFolder's classes and order
        self.classes, self.samples = folder.classes, folder.samples
        self.size, self.seed, self.io_depth, self.epoch = size, seed, io_depth, 0
        # Normalize((x / 255 - mean) / std) as one multiply-add on uint8 values.
        self.scale = (1 / (255 * torch.tensor(STD))).view(1, 3, 1, 1)
        self.shift = (-torch.tensor(MEAN) / torch.tensor(STD)).view(1, 3, 1, 1)

    def __len__(self):
        return len(self.samples)

    def set_epoch(self, epoch):
        self.epoch = epoch

    def _load(self, indices):
        """float32 [B,3,H,W] normalized, int64 [B] for these sample indices."""
        paths = [self.samples[i][0] for i in indices]
        data = ringfeed.read_files(paths, io_depth=self.io_depth)  # one call, many reads in flight
        crops = [ringfeed.decode(d, pipeline="train", size=self.size, seed=self.seed, epoch=self.epoch,
                                 index=i, name=p)
                 for d, i, p in zip(data, indices, paths)]  # uint8 [size,size,3] each
        x = torch.stack(crops).permute(0, 3, 1, 2).float()  # [B,3,H,W]
        x = x.mul_(self.scale).add_(self.shift).contiguous()
        y = torch.tensor([self.samples[i][1] for i in indices], dtype=torch.int64)
        return x, y

    def __getitem__(self, index):
        if isinstance(index, (list, tuple)):  # a BatchSampler's batch (DataLoader batch_size=None)
            return self._load(index)
        x, y = self._load([index])
        return x[0], y[0]

    def __getitems__(self, indices):  # torch >= 2.0, DataLoader(batch_size=B): samples for collate
        x, y = self._load(list(indices))
        return list(zip(x.unbind(0), y.unbind(0)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", help="dataset directory from `ringfeed gen DIR` (its train/ is used), or an ImageFolder")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--workers", default="0,2", help="comma-separated num_workers values to run (default 0,2)")
    ap.add_argument("--epochs", type=int, default=1, help="epochs per workers value (default 1)")
    args = ap.parse_args()
    train = os.path.join(args.dataset, "train")
    source = train if os.path.isdir(train) else args.dataset

    ds = ReadFilesDataset(source, size=args.size)
    x, y = ds[[0, len(ds) - 1]]  # one batch in this process first (and workers fork after that)
    assert x.shape == (2, 3, args.size, args.size) and x.dtype == torch.float32 and y.tolist() == \
        [ds.samples[0][1], ds.samples[-1][1]], (x.shape, x.dtype, y)
    print(f"{len(ds)} images, {len(ds.classes)} classes, batch {args.batch}, {args.size}x{args.size} train crops, "
          f"torch {torch.__version__}")
    for workers in (int(w) for w in args.workers.split(",")):
        torch.manual_seed(0)
        loader = DataLoader(ds, batch_size=None, num_workers=workers,
                            sampler=BatchSampler(RandomSampler(ds), args.batch, drop_last=False))
        images, checksum = 0, 0.0
        start = time.perf_counter()
        for epoch in range(args.epochs):
            ds.set_epoch(epoch)
            for x, y in loader:
                checksum += float(x[:, 0, 0, 0].sum()) + int(y.sum())  # touch every sample
                images += y.shape[0]
        seconds = time.perf_counter() - start
        print(f"num_workers={workers}: {images} images in {seconds:.2f} s = {images / seconds:.0f} images/s "
              f"({len(loader)} batches/epoch, checksum {checksum:.1f})", flush=True)


if __name__ == "__main__":
    main()
