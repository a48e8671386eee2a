"""One worker of test_dataloader.py::test_torchrun_distributed_sampler,
launched by `python -m torch.distributed.run --nproc_per_node=2`.

    dataloader_dist_worker.py SOURCE RESULT_JSON

Each rank runs the tuning guide's DistributedSampler snippet with only the
import changed, and torch's own DataLoader beside it: for two epochs
(set_epoch), ringfeed's batches must equal torch's on every rank, and the
ranks' samples must be disjoint and cover the dataset. Rank 0 writes
RESULT_JSON."""
import hashlib
import json
import sys

import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler
from torchvision import datasets
from torchvision import transforms as T

import ringfeed


def main():
    source, result_path = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ds = datasets.ImageFolder(source, transform=T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor()]))
    sampler = DistributedSampler(ds, shuffle=True, seed=3)  # rank and world size from torch.distributed
    ours = ringfeed.DataLoader(ds, batch_size=16, sampler=sampler, exact=True, strict=True)
    reference_sampler = DistributedSampler(ds, shuffle=True, seed=3)
    theirs = torch.utils.data.DataLoader(ds, batch_size=16, sampler=reference_sampler)
    epochs, same = [], True
    for epoch in range(2):
        sampler.set_epoch(epoch)
        reference_sampler.set_epoch(epoch)
        got, want = list(ours), list(theirs)
        same = same and len(got) == len(want) and all(
            torch.equal(gi, wi) and torch.equal(gl, wl) for (gi, gl), (wi, wl) in zip(got, want))
        epochs.append([hashlib.sha1(img.numpy().tobytes()).hexdigest() for images, _ in got for img in images])
    gathered = [None] * world
    dist.all_gather_object(gathered, {"rank": rank, "same_as_torch": same, "epochs": epochs})
    if rank == 0:
        everything = [hashlib.sha1(img.numpy().tobytes()).hexdigest()
                      for images, _ in ringfeed.DataLoader(ds, batch_size=50, exact=True) for img in images]
        problems = []
        if len(set(everything)) != len(everything):
            problems.append("two samples have the same pixels")
        for e in range(2):
            per_rank = [set(g["epochs"][e]) for g in gathered]
            if per_rank[0] & per_rank[1]:
                problems.append(f"epoch {e}: ranks share samples")
            if per_rank[0] | per_rank[1] != set(everything):
                problems.append(f"epoch {e}: the ranks do not cover the dataset")
        problems += [f"rank {g['rank']}: batches differ from torch's" for g in gathered if not g["same_as_torch"]]
        with open(result_path, "w") as f:
            json.dump({"ok": not problems, "problems": problems, "world_size": world,
                       "per_rank_samples": [len(g["epochs"][0]) for g in gathered]}, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
