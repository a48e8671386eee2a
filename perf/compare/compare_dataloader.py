#!/usr/bin/python3
"""ringfeed.DataLoader against torch's DataLoader(num_workers=2), in one run.

The same script with only the import changed: each case builds a
torchvision dataset and hands it, with the same arguments, to

  ringfeed    ringfeed.DataLoader(dataset, batch_size=B, shuffle=True, num_workers=2,
                                  persistent_workers=True)
  DataLoader  torch.utils.data.DataLoader(<the same arguments>)

Cases (the issue's):
  cifar10      CIFAR10 (in memory), RandomCrop(32, padding=4) + RandomHorizontalFlip
               + ToTensor + Normalize, batch 256                        goal >= 10x
  mnist        MNIST (in memory), ToTensor + Normalize, batch 256        goal >= 10x
  imagefolder  ImageFolder (JPEG files), RandomResizedCrop(224) + flip
               + ToTensor + Normalize, batch 64                          goal >= 3x

The datasets are written first, in their real on-disk formats (CIFAR's
pickled batches, MNIST's idx files: random pixels, the published sizes
50000 and 60000) and `ringfeed gen` for the ImageFolder. Each contender
runs in a fresh process, --epochs epochs (default 2), and the last one is
timed, from iter() to its last batch, touching every batch alike; rounds
are interleaved (ringfeed first on even rounds) and medians reported.

  python3 perf/compare/compare_dataloader.py --work /tmp/dl-perf --rounds 3 --out perf/results/dataloader_2core.json
"""
import argparse
import json
import os
import pickle
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GOALS = {"cifar10": 10.0, "mnist": 10.0, "imagefolder": 3.0}


def write_cifar(root, n=50000):
    import numpy as np
    folder = os.path.join(root, "cifar-10-batches-py")
    if os.path.exists(os.path.join(folder, "batches.meta")):
        return
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, count in [(f"data_batch_{i}", n // 5) for i in range(1, 6)] + [("test_batch", n // 5)]:
        with open(os.path.join(folder, name), "wb") as f:
            pickle.dump({"data": rng.integers(0, 256, (count, 3072), dtype=np.uint8),
                         "labels": [int(c) for c in rng.integers(0, 10, count)]}, f)
    with open(os.path.join(folder, "batches.meta"), "wb") as f:
        pickle.dump({"label_names": [f"class{i}" for i in range(10)]}, f)


def write_mnist(root, n=60000):
    import numpy as np
    raw = os.path.join(root, "MNIST", "raw")
    if os.path.exists(os.path.join(raw, "t10k-labels-idx1-ubyte")):
        return
    os.makedirs(raw, exist_ok=True)
    rng = np.random.default_rng(1)
    for split, count in (("train", n), ("t10k", n // 6)):
        with open(os.path.join(raw, f"{split}-images-idx3-ubyte"), "wb") as f:
            f.write(struct.pack(">IIII", 2051, count, 28, 28))
            f.write(rng.integers(0, 256, count * 784, dtype=np.uint8).tobytes())
        with open(os.path.join(raw, f"{split}-labels-idx1-ubyte"), "wb") as f:
            f.write(struct.pack(">II", 2049, count) + rng.integers(0, 10, count, dtype=np.uint8).tobytes())


def write_folder(root, images, cli):
    if not os.path.isdir(os.path.join(root, "train")):
        subprocess.run([cli, "gen", root, "--images", str(images), "--classes", "10", "--seed", "1"], check=True,
                       stdout=subprocess.DEVNULL)


def cifar10(work, transform):
    """torchvision's CIFAR10 training split over write_cifar's files."""
    import torchvision
    # The files are ours, not the published ones: skip the MD5 check.
    torchvision.datasets.CIFAR10._check_integrity = lambda self: True
    torchvision.datasets.cifar.check_integrity = lambda *a, **k: True
    return torchvision.datasets.CIFAR10(os.path.join(work, "cifar"), train=True, transform=transform)


def mnist(work, transform):
    """torchvision's MNIST training split over write_mnist's files."""
    import torchvision
    return torchvision.datasets.MNIST(os.path.join(work, "mnist"), train=True, transform=transform)


def dataset(case, work):
    import torchvision
    import torchvision.transforms as T
    if case == "cifar10":
        t = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                       T.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))])
        return cifar10(work, t), 256
    if case == "mnist":
        return mnist(work, T.Compose([T.ToTensor(), T.Normalize((0.1307,), (0.3081,))])), 256
    t = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                   T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    return torchvision.datasets.ImageFolder(os.path.join(work, "folder", "train"), transform=t), 64


def child(args):
    """One contender, one case: prints {"images", "seconds", "backend"}."""
    import torch
    ds, batch = dataset(args.case, args.work)
    if args.contender == "ringfeed":
        import ringfeed
        make, backend = ringfeed.DataLoader, None
    else:
        make, backend = torch.utils.data.DataLoader, "torch"
    loader = make(ds, batch_size=batch, shuffle=True, num_workers=args.workers, persistent_workers=True)
    backend = backend or loader.backend
    check = 0.0
    for _ in range(args.epochs - 1):  # warm-up: threads, worker processes, page cache
        for x, y in loader:
            check += float(x.reshape(x.shape[0], -1)[:, 0].sum()) + int(y.sum())
    images = 0
    start = time.perf_counter()
    for x, y in loader:
        check += float(x.reshape(x.shape[0], -1)[:, 0].sum()) + int(y.sum())
        images += x.shape[0]
    seconds = time.perf_counter() - start
    print(json.dumps({"images": images, "seconds": seconds, "backend": backend, "checksum": check}))


def run(args, contender, case):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", contender, "--case", case, "--work", args.work,
           "--workers", str(args.workers), "--epochs", str(args.epochs)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{contender} {case} failed:\n{done.stderr[-3000:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    if contender == "ringfeed" and r["backend"] != "ringfeed":
        sys.exit(f"ringfeed.DataLoader fell back to torch's on {case}: not a measurement of ringfeed")
    return r["images"] / r["seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/ringfeed-dataloader-perf", help="where the datasets are written")
    ap.add_argument("--cases", default="cifar10,mnist,imagefolder")
    ap.add_argument("--workers", type=int, default=2, help="num_workers, for both")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2, help="epochs per run; the last one is timed")
    ap.add_argument("--folder-images", type=int, default=2000)
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--child", choices=["ringfeed", "dataloader"], help=argparse.SUPPRESS)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.contender = args.child
        return child(args)
    cases = args.cases.split(",")
    cli = os.environ.get("RINGFEED_CLI", os.path.join(REPO, "build", "release", "bin", "ringfeed"))
    write_cifar(os.path.join(args.work, "cifar"))
    write_mnist(os.path.join(args.work, "mnist"))
    if "imagefolder" in cases:
        write_folder(os.path.join(args.work, "folder"), args.folder_images, cli)
    runs = {c: {"ringfeed": [], "dataloader": []} for c in cases}
    for r in range(args.rounds):
        for c in cases:
            for contender in (("ringfeed", "dataloader") if r % 2 == 0 else ("dataloader", "ringfeed")):
                runs[c][contender].append(run(args, contender, c))
            print(f"round {r + 1}/{args.rounds} {c}: ringfeed {runs[c]['ringfeed'][-1]:.0f} img/s, "
                  f"DataLoader {runs[c]['dataloader'][-1]:.0f} img/s", file=sys.stderr)
    rows = []
    print(f"\n{'case':12} {'ringfeed.DataLoader img/s':>26} {'torch DataLoader img/s':>23} {'ratio':>7} {'goal':>6}")
    for c in cases:
        a, b = statistics.median(runs[c]["ringfeed"]), statistics.median(runs[c]["dataloader"])
        rows.append({"case": c, "ringfeed_images_per_s": a, "dataloader_images_per_s": b, "ratio": a / b,
                     "goal": GOALS[c], "ringfeed_runs": runs[c]["ringfeed"], "dataloader_runs": runs[c]["dataloader"]})
        print(f"{c:12} {a:26.0f} {b:23.0f} {a / b:6.1f}x {GOALS[c]:5.0f}x")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"cpus": len(os.sched_getaffinity(0)), "workers": args.workers, "rounds": args.rounds,
                       "epochs": args.epochs, "command": " ".join(sys.argv), "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
