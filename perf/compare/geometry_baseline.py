#!/usr/bin/python3
"""Pillow + torchvision twin of perf/bench/geometry_bench.cpp: the same cases,
torchvision.transforms.functional on a PIL RGB image, one thread, images
per second of CPU time (median of --repeats timed batches; CPU time, not
wall time, so that other processes on a shared machine count less; the
comparison reads geometry_bench's cpu_time likewise).

  geometry_baseline.py [--repeats R] [--min-time S] [--json]
  geometry_baseline.py --compare BENCH.json   ratios against
      `geometry_bench --benchmark_format=json` output (ringfeed / Pillow)
  geometry_baseline.py --bench build/release/perf/geometry_bench --rounds N
      [--filter REGEX] [--out F.json]   side by side in one run: each round
      runs geometry_bench, then Pillow, and the table gives each case's
      median ratio over the rounds and its lowest (this machine's speed
      drifts by tens of percent within minutes; a ratio from one round
      each, minutes apart, can say more about the drift than the code)

Run with Debian's /usr/bin/python3 (Pillow 9.4, torchvision 0.14).
"""
import argparse
import json
import re
import statistics
import subprocess
import time

import numpy as np
import torch
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.transforms import InterpolationMode as IM


def cases():
    def resize_to(interp):
        return lambda im: F.resize(im, [im.height * 7 // 10, im.width * 7 // 10], interp)

    def centre(im):
        return [im.width * 0.5, im.height * 0.5]

    return {
        "resize_nearest": resize_to(IM.NEAREST),
        "resize_bilinear": resize_to(IM.BILINEAR),
        "resize_bicubic": resize_to(IM.BICUBIC),
        "resize_box": resize_to(IM.BOX),
        "resize_hamming": resize_to(IM.HAMMING),
        "resize_lanczos": resize_to(IM.LANCZOS),
        "crop_inside": lambda im: F.crop(im, 8, 8, im.height - 16, im.width - 16),
        "crop_outside": lambda im: F.crop(im, -8, -8, im.height, im.width),
        "hflip": F.hflip,
        "vflip": F.vflip,
        "pad4_constant": lambda im: F.pad(im, 4),
        "pad4_edge": lambda im: F.pad(im, 4, padding_mode="edge"),
        "pad4_reflect": lambda im: F.pad(im, 4, padding_mode="reflect"),
        "pad4_symmetric": lambda im: F.pad(im, 4, padding_mode="symmetric"),
        "affine_shear10_nearest": lambda im: F.affine(im, 0.0, [0, 0], 1.0, [10.0, 0.0]),
        "affine_all_bilinear": lambda im: F.affine(im, 25.0, [2, 1], 1.3, [12.0, -7.5], IM.BILINEAR),
        "translate10_bilinear": lambda im: F.affine(im, 0.0, [10, 0], 1.0, [0.0, 0.0], IM.BILINEAR),
        "rotate17_nearest": lambda im: F.rotate(im, 17.0, IM.NEAREST),
        "rotate17_bilinear": lambda im: F.rotate(im, 17.0, IM.BILINEAR),
        "rotate17_bicubic": lambda im: F.rotate(im, 17.0, IM.BICUBIC),
        "rotate17_expand_bilinear": lambda im: F.rotate(im, 17.0, IM.BILINEAR, expand=True),
        "rotate90": lambda im: F.rotate(im, 90.0, IM.NEAREST, expand=True),
    }


def measure(fn, im, repeats, min_time):
    fn(im)
    n = 1
    while True:  # batch size so that one batch takes >= min_time / repeats
        t = time.thread_time()
        for _ in range(n):
            fn(im)
        dt = time.thread_time() - t
        if dt >= min_time / repeats:
            break
        n *= 2
    rates = []
    for _ in range(repeats):
        t = time.thread_time()
        for _ in range(n):
            fn(im)
        rates.append(n / (time.thread_time() - t))
    return statistics.median(rates)


def ringfeed_rates(bench):
    """Images per second of CPU time per case from geometry_bench's JSON:
    medians with --benchmark_repetitions, else the single run."""
    ours = {}
    aggregated = any("aggregate_name" in o for o in bench["benchmarks"])
    for b in bench["benchmarks"]:
        if b.get("aggregate_name", "median") == "median" and b.get("run_type") in ("iteration", "aggregate"):
            if "aggregate_name" not in b and aggregated:
                continue
            scale = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}[b["time_unit"]]
            ours[b["run_name"].removesuffix("/real_time")] = scale / b["cpu_time"]
    return ours


def pillow_rates(args, pattern):
    rng = np.random.default_rng(0x6E0D)
    results = {}
    for w, h in ((224, 224), (500, 375)):
        im = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB")
        for name, fn in cases().items():
            key = f"geometry/{name}/{w}x{h}"
            if pattern.search(key):
                results[key] = measure(fn, im, args.repeats, args.min_time)
    return results


def rounds(args, pattern):
    per_case = {}
    for k in range(args.rounds):
        out = subprocess.run([args.bench, "--benchmark_format=json", f"--benchmark_filter={args.filter}"],
                             check=True, capture_output=True, text=True).stdout
        ours = ringfeed_rates(json.loads(out))
        pil = pillow_rates(args, pattern)
        for name, p in pil.items():
            if name in ours:
                per_case.setdefault(name, []).append((ours[name], p))
        print(f"round {k + 1}/{args.rounds} done", flush=True)
    print(f"{'case':46} {'ringfeed/s':>11} {'Pillow/s':>10} {'median':>7} {'lowest':>7}")
    table = {}
    for name, pairs in per_case.items():
        ratios = [r / p for r, p in pairs]
        r = statistics.median(x for x, _ in pairs)
        p = statistics.median(y for _, y in pairs)
        table[name] = {"ringfeed_per_s": r, "pillow_per_s": p, "ratios": ratios}
        print(f"{name:46} {r:11.0f} {p:10.0f} {statistics.median(ratios):7.2f} {min(ratios):7.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rounds": args.rounds, "cases": table}, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--compare", help="geometry_bench JSON output")
    ap.add_argument("--bench", help="the geometry_bench binary, run once per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--filter", default=".", help="cases to run (a regular expression)")
    ap.add_argument("--out", help="write the rounds' table as JSON")
    args = ap.parse_args()
    torch.set_num_threads(1)
    pattern = re.compile(args.filter)
    if args.bench:
        rounds(args, pattern)
        return
    results = pillow_rates(args, pattern)
    if not args.compare:
        print(json.dumps(results, indent=1))
        return
    with open(args.compare) as f:
        ours = ringfeed_rates(json.load(f))
    print(f"{'case':46} {'ringfeed/s':>11} {'Pillow/s':>10} {'ratio':>6}")
    for name, pil in results.items():
        r = ours.get(name)
        if r is None:
            continue
        print(f"{name:46} {r:11.0f} {pil:10.0f} {r / pil:6.2f}")


if __name__ == "__main__":
    main()
