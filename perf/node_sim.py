#!/usr/bin/env python3
"""A node simulation (issue 39): N ranks, torchrun-style, each with its own
loader on the same data, all at once. Aggregate images/s for:

  default      ringfeed.Loader with every default (threads sized by ringfeed)
  threads=K    ringfeed.Loader(threads=K) per rank, K = 1 … CPUs (the best is
               the hand-set baseline)
  old default  threads = every CPU of the affinity mask per rank (what
               threads=0 meant before ringfeed divided the node)
  torch        torch's DataLoader + torchvision ImageFolder with
               num_workers = CPUs / N per rank, DistributedSampler's share

side by side in one run, the configurations alternating each round.

    PYTHONPATH=build/release/python /usr/bin/python3 perf/node_sim.py DATA/val \\
        --ranks 2 --rounds 3 [--json OUT.json]

Prints one JSON line per run and a table of medians with the ratio of
the defaults to the best hand-set threads.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def worker(a):
    """One rank: iterates --epochs epochs of its share, prints (start, end, images)."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if a.config == "torch":
        import torch
        import torchvision.transforms as T
        from torchvision.datasets import ImageFolder
        ds = ImageFolder(a.data, transform=T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                                                      T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]))
        sampler = torch.utils.data.distributed.DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
        loader = torch.utils.data.DataLoader(ds, batch_size=a.batch, sampler=sampler,
                                             num_workers=max(1, len(os.sched_getaffinity(0)) // world))
    else:
        import ringfeed
        threads = {"default": 0, "old": len(os.sched_getaffinity(0))}.get(a.config)
        if threads is None:
            threads = int(a.config.split("=")[1])
        kw = {} if a.config == "default" else {"threads": threads}
        loader = ringfeed.Loader(a.data, batch_size=a.batch, pipeline="val", rank=rank, world_size=world, **kw)
    for _ in loader:  # warm-up epoch: start-up, page cache
        pass
    images, start = 0, time.time()
    for _ in range(a.epochs):
        for x, _ in loader:
            images += len(x)
    end = time.time()
    reason = loader.stats().get("threads_reason") if hasattr(loader, "stats") else None
    print(json.dumps({"rank": rank, "start": start, "end": end, "images": images, "threads_reason": reason}))


def run_config(a, config):
    procs = []
    for rank in range(a.ranks):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(a.ranks), LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE=str(a.ranks))
        procs.append(subprocess.Popen([sys.executable, __file__, a.data, "--worker", "--config", config,
                                       "--batch", str(a.batch), "--epochs", str(a.epochs)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"{config}: a rank failed ({p.returncode}): {err[-800:]}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    span = max(r["end"] for r in results) - min(r["start"] for r in results)
    return {"config": config, "images_per_s": sum(r["images"] for r in results) / span,
            "threads_reason": results[0]["threads_reason"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--no-torch", action="store_true", help="leave out torch's DataLoader")
    ap.add_argument("--json", help="write the runs and the summary here")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--config", default="default", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a)
    cpus = len(os.sched_getaffinity(0))
    configs = ["default"] + [f"threads={k}" for k in range(1, cpus + 1)] + ["old"] + ([] if a.no_torch else ["torch"])
    runs = []
    for r in range(a.rounds):
        for config in (configs if r % 2 == 0 else list(reversed(configs))):
            result = dict(run_config(a, config), round=r)
            print(json.dumps(result), flush=True)
            runs.append(result)
    medians = {c: statistics.median(x["images_per_s"] for x in runs if x["config"] == c) for c in configs}
    best_hand = max((c for c in configs if c.startswith("threads=")), key=medians.get)
    print(f"\n{a.ranks} ranks on {cpus} CPUs, {a.rounds} rounds, aggregate images/s (median):")
    for c in configs:
        print(f"  {c:12s} {medians[c]:8.1f}  {medians[c] / medians[best_hand]:5.2f}x best hand-set ({best_hand})")
    reason = next(x["threads_reason"] for x in runs if x["config"] == "default")
    print(f"  default threads: {reason}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"ranks": a.ranks, "cpus": cpus, "runs": runs, "medians": medians, "best_hand": best_hand,
                       "default_over_best_hand": medians["default"] / medians[best_hand],
                       "default_threads_reason": reason}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
