#!/usr/bin/python3
"""Did a change move the presets' speed? `ringfeed bench` of this build
against another build's, interleaved in one run (A B B A A B ...) on the
same files and cores, for the train and val presets (--pipelines) and any
transform list (--transform NAME=SPEC, bench's spec grammar).

  python3 perf/compare/compare_builds.py --source /tmp/gen/train --baseline /tmp/old/build/release/bin/ringfeed \
      --ringfeed build/release/bin/ringfeed --rounds 6 --out perf/results/presets_vs_previous_2core.json

Reports for each preset the median images/s of each build, the ratio of the
medians and the median per-round ratio (neighbours in time see the same
load). Goal of the transform-list issue: current / previous >= 0.98.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def bench(cli, source, pipeline, batch, threads, exact, spec=None):
    how = ["--transform", spec] if spec else ["--pipeline", pipeline]
    cmd = [cli, "bench", source, *how, "--batch", str(batch), "--threads", str(threads),
           "--device", "-1", "--json"] + (["--exact"] if exact else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["images_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True)
    ap.add_argument("--ringfeed", required=True, help="this build's CLI")
    ap.add_argument("--baseline", required=True, help="the previous build's CLI")
    ap.add_argument("--pipelines", default="train,val", help="presets, comma-separated ('' for none)")
    ap.add_argument("--transform", action="append", default=[], metavar="NAME=SPEC",
                    help="also a transform list (bench --transform SPEC) reported as NAME; repeatable")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    if os.path.realpath(args.ringfeed) == os.path.realpath(args.baseline):
        print("warning: the same CLI twice: an A/A run", file=sys.stderr)
    for f in os.scandir(args.source):  # warm the page cache
        if f.is_dir():
            for g in os.scandir(f.path):
                with open(g.path, "rb") as fh:
                    fh.read()
    result = {"source": args.source, "ringfeed": args.ringfeed, "baseline": args.baseline, "rounds": args.rounds,
              "threads": args.threads, "batch": args.batch, "mode": "exact" if args.exact else "fast",
              "cores": os.cpu_count(), "pipelines": {}}
    cases = [(p, None) for p in args.pipelines.split(",") if p]
    for t in args.transform:
        name, sep, spec = t.partition("=")
        if not sep or not name or not spec:
            ap.error(f"--transform takes NAME=SPEC, not {t!r}")
        cases.append((name, spec))
    for p, spec in cases:
        cur, base = [], []
        for r in range(args.rounds):
            order = [("cur", args.ringfeed), ("base", args.baseline)]
            for which, cli in (order if r % 2 == 0 else order[::-1]):
                (cur if which == "cur" else base).append(bench(cli, args.source, p, args.batch, args.threads,
                                                               args.exact, spec))
            print(f"{p} round {r + 1}: current {cur[-1]:.0f}, previous {base[-1]:.0f} images/s", file=sys.stderr)
        ratio = statistics.median(cur) / statistics.median(base)
        paired = statistics.median(a / b for a, b in zip(cur, base))
        result["pipelines"][p] = {**({"transform": spec} if spec else {}), "current": cur, "previous": base, "ratio_of_medians": ratio,
                                  "median_per_round_ratio": paired}
        print(f"{p:6s} current {statistics.median(cur):7.0f}  previous {statistics.median(base):7.0f} images/s  "
              f"current/previous {ratio:.3f}x (per round {paired:.3f}x)  goal >= 0.98")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
