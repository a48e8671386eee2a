#!/usr/bin/python3
"""ringfeed's loader against PyTorch's DataLoader and Pillow, in one run.

Same files, same machine, warm page cache, interleaved rounds (ringfeed,
DataLoader, Pillow, ringfeed, ...) so that drift on a noisy machine hits every
contender alike. Reports medians, the spread, and ratios:

  ringfeed      `ringfeed bench SOURCE --pipeline P --batch B --threads T
                 --device -1 --json` (float32 normalized NCHW batches, the
                 tensors the DataLoader yields)
  DataLoader    torch.utils.data.DataLoader(torchvision ImageFolder(SOURCE,
                 transform), batch_size=B, shuffle=(P == train),
                 num_workers=T): one epoch from iter() to the last batch
  Pillow        Image.open(f).convert('RGB') over every file on T processes
                 (decode alone: a bound on any PIL-based loader)

train = RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize;
val = Resize(256) + CenterCrop(224) + ToTensor + Normalize.

Needs Debian's python3-torch, python3-torchvision and python3-pil
(run with /usr/bin/python3).
"""
import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time


def ringfeed_run(cli, source, pipeline, batch, threads, exact):
    cmd = [cli, "bench", source, "--pipeline", pipeline, "--batch", str(batch), "--threads", str(threads),
           "--device", "-1", "--json"]
    if exact:
        cmd.append("--exact")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["images_per_s"], result


def dataloader_run(source, pipeline, batch, workers):
    import torch
    import torchvision
    import torchvision.transforms as T

    norm = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    if pipeline == "train":
        tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), norm])
    else:
        tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), norm])
    ds = torchvision.datasets.ImageFolder(source, transform=tf)
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=(pipeline == "train"), num_workers=workers)
    start = time.perf_counter()
    images = 0
    first = None
    for x, y in loader:
        images += x.shape[0]
        if first is None:
            first = (time.perf_counter(), images)
    seconds = time.perf_counter() - start
    steady = (images - first[1]) / (time.perf_counter() - first[0]) if images > first[1] else float("nan")
    return images / seconds, {"images": images, "seconds": seconds, "steady_images_per_s": steady}


def _decode(path):
    from PIL import Image
    with Image.open(path) as im:
        im.convert("RGB")
    return 1


def pillow_run(files, processes):
    with multiprocessing.Pool(processes) as pool:
        pool.map(_decode, files[:processes * 4])  # start-up and imports outside the timing
        start = time.perf_counter()
        n = sum(pool.map(_decode, files, chunksize=16))
        seconds = time.perf_counter() - start
    return n / seconds, {"images": n, "seconds": seconds}


def list_images(source):
    exts = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
    files = []
    for root, _, names in os.walk(source):
        files += [os.path.join(root, n) for n in names if n.lower().endswith(exts)]
    return sorted(files)


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="ImageFolder directory (e.g. from `ringfeed gen`)/train")
    ap.add_argument("--ringfeed", default="build/release/bin/ringfeed", help="path to the ringfeed CLI")
    ap.add_argument("--pipeline", choices=["train", "val"], default="train")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2, help="ringfeed threads = DataLoader workers = Pillow processes")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--exact", action="store_true", help="ringfeed in exact mode (default: fast)")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()

    files = list_images(args.source)
    if not files:
        sys.exit(f"no images under {args.source}")
    # Warm the page cache: every contender reads from memory.
    for f in files:
        with open(f, "rb") as fh:
            fh.read()

    runs = {"ringfeed": [], "dataloader": [], "pillow_decode": []}
    details = {"ringfeed": [], "dataloader": [], "pillow_decode": []}
    for r in range(args.rounds):
        for name in runs:
            if name == "ringfeed":
                ips, d = ringfeed_run(args.ringfeed, args.source, args.pipeline, args.batch, args.threads, args.exact)
            elif name == "dataloader":
                ips, d = dataloader_run(args.source, args.pipeline, args.batch, args.threads)
            else:
                ips, d = pillow_run(files, args.threads)
            runs[name].append(ips)
            details[name].append(d)
            print(f"round {r + 1}/{args.rounds}  {name:14s} {ips:8.0f} images/s", file=sys.stderr, flush=True)

    s = {k: summary(v) for k, v in runs.items()}
    rf = s["ringfeed"]["median"]
    ratio_dl = rf / s["dataloader"]["median"]
    ratio_pil = rf / s["pillow_decode"]["median"]
    mode = "exact" if args.exact else "fast"
    print(f"\n{len(files)} images in {args.source}; pipeline {args.pipeline} ({mode}), batch {args.batch}, "
          f"{args.threads} threads/workers/processes, {os.cpu_count()} cores, warm page cache, "
          f"median of {args.rounds} interleaved rounds")
    print(f"{'contender':34s} {'images/s':>9s} {'min':>7s} {'max':>7s}")
    labels = {"ringfeed": "ringfeed bench (float32 NCHW)",
              "dataloader": f"PyTorch DataLoader(num_workers={args.threads})",
              "pillow_decode": f"Pillow decode only, {args.threads} processes"}
    for k, label in labels.items():
        print(f"{label:34s} {s[k]['median']:9.0f} {s[k]['min']:7.0f} {s[k]['max']:7.0f}")
    print(f"ringfeed / DataLoader    = {ratio_dl:.2f}x")
    print(f"ringfeed / Pillow decode = {ratio_pil:.2f}x")
    dl_steady = statistics.median(d["steady_images_per_s"] for d in details["dataloader"])
    print(f"(DataLoader steady state after its first batch: {dl_steady:.0f} images/s, "
          f"ringfeed / that = {rf / dl_steady:.2f}x)")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"source": args.source, "images": len(files), "pipeline": args.pipeline, "mode": mode,
                       "batch": args.batch, "threads": args.threads, "cores": os.cpu_count(), "rounds": args.rounds,
                       "summary": s, "ratio_vs_dataloader": ratio_dl, "ratio_vs_pillow_decode": ratio_pil,
                       "dataloader_steady_images_per_s": dl_steady, "details": details}, fh, indent=1)


if __name__ == "__main__":
    main()
