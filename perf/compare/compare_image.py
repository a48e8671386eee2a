#!/usr/bin/python3
"""Decode and decode+transform throughput per core: ringfeed against Pillow +
torchvision on the same files, in one run.

Each case runs in interleaved rounds (ringfeed, Pillow, ringfeed, Pillow...)
so drift on a noisy machine hits both alike; the table shows medians of the
rounds' medians, images per second on one core, and the ratio
ringfeed / Pillow (> 1: ringfeed faster).

  compare_image.py [--dir DIR] [--count N] [--rounds R] [--bench PATH] [--out FILE]

Without --dir a dataset is generated with `ringfeed gen`. Run with Debian's
/usr/bin/python3.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# ringfeed case -> the Pillow case it is compared with
PAIRS = [("decode", "decode"), ("val.exact", "val.exact"), ("val.fast", "val.exact"), ("val.fast", "val.pil-draft"),
         ("train.exact", "train.exact"), ("train.fast", "train.exact")]


def run(cmd):
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir")
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3, help="timed passes per round")
    ap.add_argument("--bench", default="build/release/perf/image_bench")
    ap.add_argument("--ringfeed", default="build/release/bin/ringfeed")
    ap.add_argument("--out")
    args = ap.parse_args()

    d = args.dir
    if d is None:
        d = os.path.join(tempfile.mkdtemp(prefix="ringfeed-imgperf-"), "ds")
        subprocess.run([args.ringfeed, "gen", d, "--images", str(args.count)], check=True, capture_output=True)
        d = os.path.join(d, "train")

    rf_cases = sorted({a for a, _ in PAIRS})
    pil_cases = sorted({b for _, b in PAIRS})
    rf = {c: [] for c in rf_cases}
    pil = {c: [] for c in pil_cases}
    common = ["--count", str(args.count), "--repeats", str(args.repeats)]
    for r in range(args.rounds):
        for c in rf_cases:
            rf[c].append(run([args.bench, d, "--case", c] + common)["cases"][c]["median"])
        for c in pil_cases:
            pil[c].append(run([sys.executable, os.path.join(HERE, "image_baseline.py"), d, "--case", c] + common)
                          ["cases"][c]["median"])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    med = lambda v: statistics.median(v)
    print(f"\n{args.count} JPEGs from {d} (in memory), one core, uint8 HWC output, "
          f"median of {args.rounds} interleaved rounds x {args.repeats} passes")
    print(f"{'ringfeed case':14s} {'img/s':>7s} | {'Pillow+torchvision case':24s} {'img/s':>7s} | ratio")
    rows = []
    for a, b in PAIRS:
        ratio = med(rf[a]) / med(pil[b])
        rows.append({"ringfeed": a, "pillow": b, "ringfeed_images_per_s": med(rf[a]),
                     "pillow_images_per_s": med(pil[b]), "ratio": ratio,
                     "ringfeed_rounds": rf[a], "pillow_rounds": pil[b]})
        print(f"{a:14s} {med(rf[a]):7.0f} | {b:24s} {med(pil[b]):7.0f} | {ratio:5.2f}x")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"dir": d, "count": args.count, "rounds": args.rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
