#!/usr/bin/python3
"""ringfeed's loader against PyTorch's DataLoader and Pillow, in one run.

Same files, same machine, warm page cache, interleaved rounds (ringfeed,
Python loader, DataLoader, Pillow, ringfeed, ...) so that drift on a noisy
machine hits every contender alike. Reports medians, the spread, and ratios:

  ringfeed      `ringfeed bench SOURCE --pipeline P --batch B --threads T
                 --device -1 --json` (float32 normalized NCHW batches, the
                 tensors the DataLoader yields)
  Python loader ringfeed.Loader(SOURCE, batch_size=B, pipeline=P,
                 threads=T, output="float32") on the host, in a process of
                 its own: one epoch from iter() to the last batch
  DataLoader    torch.utils.data.DataLoader(torchvision ImageFolder(SOURCE,
                 transform), batch_size=B, shuffle=(P == train),
                 num_workers=T): one epoch from iter() to the last batch
  Pillow        Image.open(f).convert('RGB') over every file on T processes
                 (decode alone: a bound on any PIL-based loader)

The Python loader and the DataLoader consumers touch every batch alike:
float(images[:, 0, 0, 0].sum()) + int(labels.sum()) (one pixel per sample).
Goals: Python loader >= 0.95x `ringfeed bench`, >= 3x the DataLoader.

The ringfeed module: --python-path DIR, else $PYTHONPATH, else this
checkout's build/release/python or build/default/python (the first that
exists), else an installed one. The CLI: --ringfeed, else build/release/bin
or build/default/bin of this checkout.

Old build against new (did a change move performance?):
--baseline-ringfeed CLI adds a `ringfeed bench` of that other build, and
--baseline-python-path DIR a ringfeed.Loader imported from DIR (its own
process, like the current one), each run in every round next to its current
counterpart; odd rounds run the current build first, even rounds the
baseline first. The report adds "current / baseline" ratios of the medians
and the median per-round ratio (neighbours in time see the same load).
Build the old commit in a worktree of its own, e.g.
  git worktree add /tmp/old OLD && cd /tmp/old && cmake --preset release &&
  cmake --build --preset release
then pass --baseline-ringfeed /tmp/old/build/release/bin/ringfeed
--baseline-python-path /tmp/old/build/release/python.

train = RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize;
val = Resize(256) + CenterCrop(224) + ToTensor + Normalize.

Needs Debian's python3-torch, python3-torchvision and python3-pil
(run with /usr/bin/python3).
"""
import argparse
import json
import multiprocessing
import os
import shutil
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


HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def touch(x, y):
    """What the consumers do with each batch: read one pixel per sample and the labels."""
    return float(x[:, 0, 0, 0].sum()) + int(y.sum())


def python_loader_run(python_path, source, pipeline, batch, threads, exact, baseline=False):
    """ringfeed.Loader in a fresh process (no state shared with the other contenders).
    baseline: python_path is the baseline build's; the module must come from there."""
    env = dict(os.environ)
    if python_path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (python_path, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, os.path.abspath(__file__), "--child-python-loader", "--source", source,
           "--pipeline", pipeline, "--batch", str(batch), "--threads", str(threads)] + (["--exact"] if exact else [])
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        which = "--baseline-python-path" if baseline else "--python-path, or --no-python"
        sys.exit(f"the {'baseline ' if baseline else ''}Python loader failed "
                 f"(PYTHONPATH={env.get('PYTHONPATH', '')!r}; build the module with "
                 f"`cmake --build --preset release --target ringfeed_python`, pass {which}):\n"
                 + done.stderr[-2000:])
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if baseline:
        # A baseline that silently imported some other ringfeed would compare a build with itself.
        base = os.path.realpath(python_path)
        if os.path.commonpath([base, os.path.realpath(result["module"])]) != base:
            sys.exit(f"the baseline Python loader imported {result['module']}, not one under {python_path}")
    return result["images"] / result["seconds"], result


def timed_epoch(loader):
    """One epoch of (images, labels) batches, each touched: (images,
    seconds, images/s after the first batch, checksum)."""
    start = time.perf_counter()
    images, check, first = 0, 0.0, None
    for x, y in loader:
        check += touch(x, y)
        images += x.shape[0]
        if first is None:
            first = (time.perf_counter(), images)
    seconds = time.perf_counter() - start
    steady = (images - first[1]) / (time.perf_counter() - first[0]) if images > first[1] else float("nan")
    return images, seconds, steady, check


def python_loader_child(source, pipeline, batch, threads, exact):
    import torch  # before the clock starts (ringfeed imports it with the first batch)
    import ringfeed

    loader = ringfeed.Loader(source, batch_size=batch, pipeline=pipeline, size=224, exact=exact,
                             output="float32", device=None, threads=threads)
    images, seconds, steady, check = timed_epoch(loader)
    st = loader.stats()
    loader.close()
    print(json.dumps({"images": images, "seconds": seconds, "steady_images_per_s": steady, "checksum": check,
                      "loader_images_per_s": st["images_per_s"], "bottleneck": st["bottleneck"],
                      "stages": st["stages"], "threads": st["threads"], "backend": st["backend"],
                      "module": ringfeed.__file__, "version": ringfeed.__version__, "torch": torch.__version__}))


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
    images, seconds, steady, check = timed_epoch(loader)
    return images / seconds, {"images": images, "seconds": seconds, "steady_images_per_s": steady, "checksum": check}


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


def first_existing(*paths):
    return next((p for p in paths if os.path.exists(p)), None)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="ImageFolder directory (e.g. from `ringfeed gen`)/train")
    ap.add_argument("--ringfeed", help="path to the ringfeed CLI (default: this checkout's build/release/bin/ringfeed, "
                    "else build/default/bin/ringfeed)")
    ap.add_argument("--python-path", help="directory holding the ringfeed Python package (default: $PYTHONPATH, else "
                    "this checkout's build/release/python, else build/default/python, else an installed one)")
    ap.add_argument("--no-python", action="store_true", help="leave the Python ringfeed.Loader out (the baseline's too)")
    ap.add_argument("--baseline-ringfeed", metavar="CLI",
                    help="a baseline build's ringfeed CLI: also benched every round, reported as current / baseline")
    ap.add_argument("--baseline-python-path", metavar="DIR",
                    help="directory holding a baseline build's ringfeed Python package: its Loader also runs every "
                         "round (own process, DIR first on PYTHONPATH), reported as current / baseline")
    ap.add_argument("--child-python-loader", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--pipeline", choices=["train", "val"], default="train")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2, help="ringfeed threads = DataLoader workers = Pillow processes")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--exact", action="store_true", help="ringfeed in exact mode (default: fast)")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    if args.child_python_loader:
        return python_loader_child(args.source, args.pipeline, args.batch, args.threads, args.exact)
    args.ringfeed = args.ringfeed or first_existing(
        *(os.path.join(REPO, "build", p, "bin", "ringfeed") for p in ("release", "default"))) or "ringfeed"
    if not args.python_path and not os.environ.get("PYTHONPATH"):
        args.python_path = first_existing(*(os.path.join(REPO, "build", p, "python") for p in ("release", "default")))
    if args.baseline_ringfeed and not os.access(args.baseline_ringfeed, os.X_OK):
        sys.exit(f"--baseline-ringfeed {args.baseline_ringfeed}: not an executable")
    if args.baseline_python_path and not os.path.isdir(os.path.join(args.baseline_python_path, "ringfeed")):
        sys.exit(f"--baseline-python-path {args.baseline_python_path}: no ringfeed package in it")
    if args.baseline_python_path and args.no_python:
        print("--no-python: the baseline Python loader is left out too", file=sys.stderr)

    files = list_images(args.source)
    if not files:
        sys.exit(f"no images under {args.source}")
    # Warm the page cache: every contender reads from memory.
    for f in files:
        with open(f, "rb") as fh:
            fh.read()

    bench_pair = ["ringfeed"] + (["ringfeed_baseline"] if args.baseline_ringfeed else [])
    python_pair = [] if args.no_python else (
        ["python_loader"] + (["python_loader_baseline"] if args.baseline_python_path else []))
    names = bench_pair + python_pair + ["dataloader", "pillow_decode"]
    runs = {k: [] for k in names}
    details = {k: [] for k in names}
    width = max(14, *map(len, names))
    for r in range(args.rounds):
        # Current and baseline side by side, which goes first alternating by round.
        order = names if r % 2 == 0 else bench_pair[::-1] + python_pair[::-1] + ["dataloader", "pillow_decode"]
        for name in order:
            if name in ("ringfeed", "ringfeed_baseline"):
                cli = args.ringfeed if name == "ringfeed" else args.baseline_ringfeed
                ips, d = ringfeed_run(cli, args.source, args.pipeline, args.batch, args.threads, args.exact)
            elif name in ("python_loader", "python_loader_baseline"):
                baseline = name == "python_loader_baseline"
                ips, d = python_loader_run(args.baseline_python_path if baseline else args.python_path, args.source,
                                           args.pipeline, args.batch, args.threads, args.exact, baseline=baseline)
            elif name == "dataloader":
                ips, d = dataloader_run(args.source, args.pipeline, args.batch, args.threads)
            else:
                ips, d = pillow_run(files, args.threads)
            runs[name].append(ips)
            details[name].append(d)
            print(f"round {r + 1}/{args.rounds}  {name:{width}s} {ips:8.0f} images/s", file=sys.stderr, flush=True)

    s = {k: summary(v) for k, v in runs.items()}
    rf = s["ringfeed"]["median"]
    ratio_dl = rf / s["dataloader"]["median"]
    ratio_pil = rf / s["pillow_decode"]["median"]
    mode = "exact" if args.exact else "fast"
    print(f"\n{len(files)} images in {args.source}; pipeline {args.pipeline} ({mode}), batch {args.batch}, "
          f"{args.threads} threads/workers/processes, {os.cpu_count()} cores, warm page cache, "
          f"median of {args.rounds} interleaved rounds")
    print(f"CLI {args.ringfeed}" + ("" if args.no_python else
          f"; module {details['python_loader'][0]['module']} ({details['python_loader'][0]['version']})"))
    if "ringfeed_baseline" in s or "python_loader_baseline" in s:
        print("baseline: " + "; ".join(
            ([f"CLI {args.baseline_ringfeed}"] if "ringfeed_baseline" in s else []) +
            ([f"module {details['python_loader_baseline'][0]['module']} "
              f"({details['python_loader_baseline'][0]['version']})"] if "python_loader_baseline" in s else [])))
        same = ([] if "ringfeed_baseline" not in s or os.path.realpath(shutil.which(args.ringfeed) or args.ringfeed)
                != os.path.realpath(args.baseline_ringfeed) else ["CLI"]) + \
               ([] if "python_loader_baseline" not in s or os.path.realpath(details["python_loader"][0]["module"])
                != os.path.realpath(details["python_loader_baseline"][0]["module"]) else ["Python module"])
        if same:
            print(f"warning: current and baseline are the same {' and '.join(same)}: an A/A run")
    print(f"{'contender':38s} {'images/s':>9s} {'min':>7s} {'max':>7s}")
    labels = {"ringfeed": "ringfeed bench (float32 NCHW)",
              "ringfeed_baseline": "ringfeed bench, baseline build",
              "python_loader": "ringfeed.Loader, Python (float32 NCHW)",
              "python_loader_baseline": "ringfeed.Loader, Python, baseline",
              "dataloader": f"PyTorch DataLoader(num_workers={args.threads})",
              "pillow_decode": f"Pillow decode only, {args.threads} processes"}
    for k, label in labels.items():
        if k in s:
            print(f"{label:38s} {s[k]['median']:9.0f} {s[k]['min']:7.0f} {s[k]['max']:7.0f}")
    print(f"ringfeed / DataLoader    = {ratio_dl:.2f}x")
    print(f"ringfeed / Pillow decode = {ratio_pil:.2f}x")
    dl_steady = statistics.median(d["steady_images_per_s"] for d in details["dataloader"])
    print(f"(DataLoader steady state after its first batch: {dl_steady:.0f} images/s, "
          f"ringfeed / that = {rf / dl_steady:.2f}x)")
    ratios = {"ratio_vs_dataloader": ratio_dl, "ratio_vs_pillow_decode": ratio_pil}
    if "python_loader" in s:
        py = s["python_loader"]["median"]
        ratios.update(python_vs_ringfeed_bench=py / rf, python_vs_dataloader=py / s["dataloader"]["median"],
                      python_vs_dataloader_steady=py / dl_steady)
        # Paired within each round too: on a noisy machine, neighbours in time see the same load.
        paired = {k: statistics.median(a / b for a, b in zip(runs["python_loader"], runs[k]))
                  for k in ("ringfeed", "dataloader")}
        ratios.update(python_vs_ringfeed_bench_paired=paired["ringfeed"], python_vs_dataloader_paired=paired["dataloader"])
        print(f"Python loader / ringfeed bench = {py / rf:.2f}x (goal >= 0.95; median per-round ratio "
              f"{paired['ringfeed']:.2f}x)")
        print(f"Python loader / DataLoader     = {py / s['dataloader']['median']:.2f}x (goal >= 3; median per-round "
              f"ratio {paired['dataloader']:.2f}x; {py / dl_steady:.2f}x vs its steady state)")
        last = details["python_loader"][-1]
        print(f"(Python loader: its own count {statistics.median(d['loader_images_per_s'] for d in details['python_loader']):.0f}"
              f" images/s, bottleneck {last['bottleneck']}, consumer wait {last['stages']['consumer_wait_s']:.2f} s"
              f" in the last round)")
    baseline = {}
    for cur, base, key, label in (("ringfeed", "ringfeed_baseline", "bench", "ringfeed bench"),
                                  ("python_loader", "python_loader_baseline", "python", "Python loader ")):
        if base not in s:
            continue
        per_round = [a / b for a, b in zip(runs[cur], runs[base])]
        med, paired = s[cur]["median"] / s[base]["median"], statistics.median(per_round)
        ratios.update({f"{key}_current_vs_baseline": med, f"{key}_current_vs_baseline_paired": paired,
                       f"{key}_current_vs_baseline_per_round": per_round})
        print(f"{label} current / baseline = {med:.3f}x (median per-round ratio {paired:.3f}x, "
              f"per round {min(per_round):.3f}-{max(per_round):.3f}x)")
    if "ringfeed_baseline" in s:
        baseline["baseline_ringfeed"] = args.baseline_ringfeed
    if "python_loader_baseline" in s:
        baseline["baseline_python_path"] = args.baseline_python_path
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"source": args.source, "images": len(files), "pipeline": args.pipeline, "mode": mode,
                       "batch": args.batch, "threads": args.threads, "cores": os.cpu_count(), "rounds": args.rounds,
                       **baseline, "summary": s, **ratios, "dataloader_steady_images_per_s": dl_steady,
                       "details": details},
                      fh, indent=1)

if __name__ == "__main__":
    main()
