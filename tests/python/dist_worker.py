"""One worker of test_distributed.py::test_torch_distributed_two_processes,
launched by `python -m torch.distributed.run --nproc_per_node=2`.

    dist_worker.py SOURCE RESULT_JSON

Each worker joins a gloo group, builds a ringfeed.Loader WITHOUT rank or
world_size (RANK/WORLD_SIZE are removed from the environment after
init_process_group, so only torch.distributed can supply them), digests its
samples for two epochs and all_gathers them; rank 0 checks that per epoch
the ranks' samples are disjoint and cover the dataset, and writes RESULT_JSON.
"""
import hashlib
import json
import os
import sys

import torch.distributed as dist

import ringfeed

KW = dict(batch_size=16, pipeline="val", size=64, output="uint8", threads=2)
EPOCHS = 2


def digest(img):
    return hashlib.sha1(img.contiguous().numpy().tobytes()).hexdigest()


def main():
    source, result_path = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE"):
        os.environ.pop(var, None)

    loader = ringfeed.Loader(source, **KW, shuffle=True, seed=9)
    state = loader.state_dict()
    epochs = []
    for _ in range(EPOCHS):
        epochs.append([digest(img) for images, _ in loader for img in images])
    mine = {"rank": rank, "state_rank": state["rank"], "state_world": state["world_size"],
            "len": len(loader), "epochs": epochs}
    gathered = [None] * world
    dist.all_gather_object(gathered, mine)

    ok = True
    if rank == 0:
        problems = []
        ref = ringfeed.Loader(source, **KW, shuffle=False, rank=0, world_size=1)
        everything = [digest(img) for images, _ in ref for img in images]
        if len(set(everything)) != len(everything):
            problems.append("duplicate pixels in the dataset")
        for g in gathered:
            if (g["state_rank"], g["state_world"]) != (g["rank"], world):
                problems.append(f"worker {g['rank']}: loader says rank {g['state_rank']} of {g['state_world']}")
        for e in range(EPOCHS):
            sets = [set(g["epochs"][e]) for g in gathered]
            for a in range(world):
                if len(sets[a]) != len(gathered[a]["epochs"][e]):
                    problems.append(f"epoch {e}: rank {a} got a sample twice")
                for b in range(a + 1, world):
                    if sets[a] & sets[b]:
                        problems.append(f"epoch {e}: ranks {a} and {b} share {len(sets[a] & sets[b])} samples")
            union = set().union(*sets)
            if union != set(everything):
                problems.append(f"epoch {e}: {len(set(everything) - union)} samples on no rank, "
                                f"{len(union - set(everything))} unknown")
        if gathered[0]["epochs"][0] == gathered[0]["epochs"][1]:
            problems.append("rank 0 got the same order in epochs 0 and 1")
        ok = not problems
        report = {"ok": ok, "problems": problems, "world_size": world, "ranks": [g["rank"] for g in gathered],
                  "epochs": EPOCHS, "dataset_size": len(everything),
                  "per_rank_samples": [len(g["epochs"][0]) for g in gathered]}
        with open(result_path + ".tmp", "w") as f:
            json.dump(report, f)
        os.replace(result_path + ".tmp", result_path)
        print(json.dumps(report), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
