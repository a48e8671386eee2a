#!/usr/bin/python3
"""Pillow + torchvision, images per second per core, on files in memory: the
baseline twin of perf/bench/image_bench.cpp (same cases, same JSON).

  decode           Image.open(BytesIO(b)).convert('RGB')
  val.exact        + Resize(256) + CenterCrop(224), np.asarray (uint8 HWC)
  val.pil-draft    the same with img.draft('RGB', (256, 256)) first: Pillow's
                   own DCT-domain scaling, the fair rival of ringfeed's fast mode
  train.exact      + RandomResizedCrop(224) + RandomHorizontalFlip, np.asarray

One process, torch.set_num_threads(1).
  image_baseline.py DIR [--count N] [--repeats R] [--case NAME]
Run with Debian's /usr/bin/python3 (python3-pil, python3-torchvision).
"""
import argparse
import io
import json
import os
import statistics
import time

import numpy as np
import torch
import torchvision.transforms as T
from PIL import Image


def load(d, count):
    paths = []
    for root, _, names in os.walk(d):
        paths += [os.path.join(root, n) for n in names if n.lower().endswith((".jpg", ".jpeg"))]
    paths.sort()
    paths = paths[:count] if count else paths
    out = []
    for p in paths:
        with open(p, "rb") as f:
            out.append(f.read())
    return out


def make_cases():
    val = T.Compose([T.Resize(256), T.CenterCrop(224)])
    train = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip()])

    def decode(b):
        return Image.open(io.BytesIO(b)).convert("RGB")

    def val_exact(b):
        return np.asarray(val(decode(b)))

    def val_draft(b):
        im = Image.open(io.BytesIO(b))
        im.draft("RGB", (256, 256))  # DCT scaling by up to 1/8 while staying >= 256
        return np.asarray(val(im.convert("RGB")))

    def train_exact(b):
        return np.asarray(train(decode(b)))

    return {"decode": lambda b: decode(b).load(), "val.exact": val_exact, "val.pil-draft": val_draft,
            "train.exact": train_exact}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--case")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(1)
    files = load(args.dir, args.count)
    result = {"images": len(files), "threads": 1, "cases": {}}
    for name, fn in make_cases().items():
        if args.case and args.case != name:
            continue
        for b in files[:20]:
            fn(b)  # warm-up
        runs = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            for b in files:
                fn(b)
            runs.append(len(files) / (time.perf_counter() - t0))
        result["cases"][name] = {"median": statistics.median(runs), "min": min(runs), "max": max(runs), "runs": runs}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
