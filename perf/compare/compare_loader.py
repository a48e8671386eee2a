#!/usr/bin/python3
"""ringfeed's loader against PyTorch's DataLoader and Pillow, in one run.

Same files, same machine, warm page cache, interleaved rounds (ringfeed,
Python loader, DataLoader, DataLoader with draft(), Pillow, bare decode,
ringfeed, ...) so that drift on a noisy machine hits every contender alike.
Reports medians, the spread, and ratios:

  ringfeed      `ringfeed bench SOURCE --pipeline P --batch B --threads T
                 --size S --device -1 --json` (float32 normalized NCHW batches, the
                 tensors the DataLoader yields)
  Python loader ringfeed.Loader(SOURCE, batch_size=B, pipeline=P,
                 threads=T, output="float32") on the host, in a process of
                 its own: one epoch from iter() to the last batch
  DataLoader    torch.utils.data.DataLoader(torchvision ImageFolder(SOURCE,
                 transform), batch_size=B, shuffle=(P == train),
                 num_workers=T): one epoch from iter() to the last batch
  DataLoader,   the same DataLoader, but ImageFolder's loader calls
  draft()        Image.draft("RGB", (s, s)) before convert("RGB"): Pillow's
                 own DCT scaling (libjpeg decodes at 1/2, 1/4 or 1/8 while
                 both sides stay >= s), s = --size for train, Resize's size
                 for val; train crops then come from the reduced image
  Pillow        Image.open(f).convert('RGB') over every file on T processes
                 (decode alone: a bound on any PIL-based loader)
  bare decode   perf/decode_limit DIR --threads T: TurboJPEG's full decode
                 (tjDecompress2 to RGB) of the same JPEGs held in memory, on
                 T threads, for --decode-seconds; the limit of any loader
                 that decodes whole images. Goal: ringfeed >= 1.1x it
                 (issue 17: a train sample cheaper than a bare decode)

The Python loader and the DataLoader consumers touch every batch alike:
float(images[:, 0, 0, 0].sum()) + int(labels.sum()) (one pixel per sample).
Goals: Python loader >= 0.95x `ringfeed bench`, >= 3x the DataLoader.

The ringfeed module: --python-path DIR, else $PYTHONPATH, else this
checkout's build/release/python or build/default/python (the first that
exists), else an installed one. The CLI: --ringfeed, else build/release/bin
or build/default/bin of this checkout. decode_limit: --decode-limit, else
build/release/perf or build/default/perf of this checkout (`cmake --build
--preset release --target decode_limit`); without one that contender is
left out, and the report says so.

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

train = RandomResizedCrop(S) + RandomHorizontalFlip + ToTensor + Normalize;
val = Resize(S * 256 // 224) + CenterCrop(S) + ToTensor + Normalize, with
S = --size (224; `ringfeed bench --size` and ringfeed.Loader(size=) alike).

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


def ringfeed_run(cli, source, pipeline, batch, threads, exact, size=224):
    cmd = [cli, "bench", source, "--pipeline", pipeline, "--batch", str(batch), "--threads", str(threads),
           "--size", str(size), "--device", "-1", "--json"]
    if exact:
        cmd.append("--exact")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["images_per_s"], result


HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def touch(x, y):
    """What the consumers do with each batch: read one pixel per sample and the labels."""
    return float(x[:, 0, 0, 0].sum()) + int(y.sum())


def python_loader_run(python_path, source, pipeline, batch, threads, exact, baseline=False, size=224):
    """ringfeed.Loader in a fresh process (no state shared with the other contenders).
    baseline: python_path is the baseline build's; the module must come from there."""
    env = dict(os.environ)
    if python_path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (python_path, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, os.path.abspath(__file__), "--child-python-loader", "--source", source,
           "--pipeline", pipeline, "--batch", str(batch), "--threads", str(threads), "--size", str(size)] + \
          (["--exact"] if exact else [])
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


def steady_state(start, times, sizes, warmup=1):
    """Start-up and steady state of one run from its batches' delivery
    times (perf_counter seconds) and sizes, the rule `ringfeed bench`
    applies too: the first `warmup` batches (at least 1, at most half of
    them) are the warm-up; steady = the images after it over the time after
    it. Returns {first_batch_s, warmup_batches, steady_images,
    steady_seconds, steady_images_per_s (None when nothing came after the
    warm-up)}."""
    n = len(times)
    w = max(1, min(warmup, n // 2)) if n else 0
    out = {"first_batch_s": times[0] - start if n else None, "warmup_batches": w,
           "steady_images": sum(sizes[w:]), "steady_seconds": times[-1] - times[w - 1] if n > w else 0.0}
    out["steady_images_per_s"] = (out["steady_images"] / out["steady_seconds"]
                                  if out["steady_images"] and out["steady_seconds"] > 0 else None)
    return out


def timed_epoch(loader, warmup=1):
    """One epoch of (images, labels) batches, each touched: (images,
    seconds, images/s after the warm-up batches, checksum, steady_state())."""
    start = time.perf_counter()
    images, check, times, sizes = 0, 0.0, [], []
    for x, y in loader:
        check += touch(x, y)
        images += x.shape[0]
        times.append(time.perf_counter())
        sizes.append(x.shape[0])
    seconds = time.perf_counter() - start
    s = steady_state(start, times, sizes, warmup)
    steady = s["steady_images_per_s"] if s["steady_images_per_s"] is not None else float("nan")
    return images, seconds, steady, check, s


def python_loader_child(source, pipeline, batch, threads, exact, size=224, warmup=1):
    import torch  # before the clock starts (ringfeed imports it with the first batch)
    import ringfeed

    opened = time.perf_counter()
    loader = ringfeed.Loader(source, batch_size=batch, pipeline=pipeline, size=size, exact=exact,
                             output="float32", device=None, threads=threads)
    open_s = time.perf_counter() - opened
    images, seconds, steady, check, s = timed_epoch(loader, warmup)
    st = loader.stats()
    loader.close()
    print(json.dumps({"images": images, "seconds": seconds, "steady_images_per_s": steady, "checksum": check,
                      "open_s": open_s, **{k: v for k, v in s.items() if k != "steady_images_per_s"},
                      "loader_images_per_s": st["images_per_s"], "bottleneck": st["bottleneck"],
                      "stages": st["stages"], "threads": st["threads"], "backend": st["backend"],
                      "module": ringfeed.__file__, "version": ringfeed.__version__, "torch": torch.__version__}))


class draft_loader:
    """ImageFolder's loader (pil_loader) with Pillow's DCT scaling: draft()
    lets libjpeg decode at 1/2, 1/4 or 1/8 scale as long as both sides stay
    >= size (a no-op for other formats). A class, so workers can pickle it."""

    def __init__(self, size):
        self.size = size

    def __call__(self, path):
        from PIL import Image
        with open(path, "rb") as f:
            im = Image.open(f)
            im.draft("RGB", (self.size, self.size))
            return im.convert("RGB")


def dataloader_run(source, pipeline, batch, workers, size=224, draft=False, warmup=1):
    """One epoch of DataLoader(ImageFolder) with torchvision's transforms;
    draft: the loader is draft_loader(the size the first resize needs).
    open_s: ImageFolder's scan; the steady state after `warmup` batches."""
    import torch
    import torchvision
    import torchvision.transforms as T

    norm = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    resize = size * 256 // 224  # ringfeed's val preset (lib/loader/presets.cpp)
    if pipeline == "train":
        tf = T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(), T.ToTensor(), norm])
    else:
        tf = T.Compose([T.Resize(resize), T.CenterCrop(size), T.ToTensor(), norm])
    extra = {"loader": draft_loader(size if pipeline == "train" else resize)} if draft else {}
    opened = time.perf_counter()
    ds = torchvision.datasets.ImageFolder(source, transform=tf, **extra)
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=(pipeline == "train"), num_workers=workers)
    open_s = time.perf_counter() - opened
    images, seconds, steady, check, s = timed_epoch(loader, warmup)
    return images / seconds, {"images": images, "seconds": seconds, "steady_images_per_s": steady, "checksum": check,
                              "open_s": open_s, **{k: v for k, v in s.items() if k != "steady_images_per_s"}}


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


DECODE_LIMIT_FILES = 2000  # decode_limit's own default: the corpus it holds in memory


def find_decode_limit(explicit):
    """(path, None) of the decode_limit program, or (None, why it is left out)."""
    if explicit:
        if not os.access(explicit, os.X_OK):
            sys.exit(f"--decode-limit {explicit}: not an executable")
        return explicit, None
    found = first_existing(*(os.path.join(REPO, "build", p, "perf", "decode_limit") for p in ("release", "default")))
    if found:
        return found, None
    return None, ("no decode_limit in this checkout's build/release/perf or build/default/perf (build it: "
                  "`cmake --build --preset release --target decode_limit`, or pass --decode-limit PATH)")


def decode_limit_run(program, source, threads, seconds, files):
    """perf/decode_limit: TurboJPEG's full decodes of the source's JPEGs (the
    first `files` in sorted path order) held in memory, on `threads` threads."""
    cmd = [program, source, "--threads", str(threads), "--seconds", str(seconds), "--files", str(files)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"decode_limit failed ({' '.join(cmd)}):\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["images_per_s"], result


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="ImageFolder directory (e.g. from `ringfeed gen`)/train")
    ap.add_argument("--ringfeed", help="path to the ringfeed CLI (default: this checkout's build/release/bin/ringfeed, "
                    "else build/default/bin/ringfeed)")
    ap.add_argument("--python-path", help="directory holding the ringfeed Python package (default: $PYTHONPATH, else "
                    "this checkout's build/release/python, else build/default/python, else an installed one)")
    ap.add_argument("--no-python", action="store_true", help="leave the Python ringfeed.Loader out (the baseline's too)")
    ap.add_argument("--decode-limit", metavar="PATH",
                    help="the perf/decode_limit program (default: this checkout's build/release/perf/decode_limit, "
                         "else build/default/perf/decode_limit; none found: that contender is left out)")
    ap.add_argument("--decode-seconds", type=float, default=3.0, help="how long each decode_limit run decodes")
    ap.add_argument("--baseline-ringfeed", metavar="CLI",
                    help="a baseline build's ringfeed CLI: also benched every round, reported as current / baseline")
    ap.add_argument("--baseline-python-path", metavar="DIR",
                    help="directory holding a baseline build's ringfeed Python package: its Loader also runs every "
                         "round (own process, DIR first on PYTHONPATH), reported as current / baseline")
    ap.add_argument("--child-python-loader", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--pipeline", choices=["train", "val"], default="train")
    ap.add_argument("--size", type=int, default=224,
                    help="output size: train crops to S, val resizes to S*256//224 and crops S (default 224)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2,
                    help="ringfeed threads = DataLoader workers = Pillow processes = decode_limit threads")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--exact", action="store_true", help="ringfeed in exact mode (default: fast)")
    ap.add_argument("--out", help="write the results as JSON here")
    return ap.parse_args()


def main():
    args = parse_args()
    if args.child_python_loader:
        return python_loader_child(args.source, args.pipeline, args.batch, args.threads, args.exact, args.size)
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
    decode_limit, decode_limit_missing = find_decode_limit(args.decode_limit)
    if decode_limit_missing:
        print(f"bare decode left out: {decode_limit_missing}", file=sys.stderr)

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
    others = ["dataloader", "dataloader_draft", "pillow_decode"] + (["decode_limit"] if decode_limit else [])
    names = bench_pair + python_pair + others
    runs = {k: [] for k in names}
    details = {k: [] for k in names}
    width = max(14, *map(len, names))
    for r in range(args.rounds):
        # Current and baseline side by side, which goes first alternating by round.
        order = names if r % 2 == 0 else bench_pair[::-1] + python_pair[::-1] + others
        for name in order:
            if name in ("ringfeed", "ringfeed_baseline"):
                cli = args.ringfeed if name == "ringfeed" else args.baseline_ringfeed
                ips, d = ringfeed_run(cli, args.source, args.pipeline, args.batch, args.threads, args.exact,
                                      args.size)
            elif name in ("python_loader", "python_loader_baseline"):
                baseline = name == "python_loader_baseline"
                ips, d = python_loader_run(args.baseline_python_path if baseline else args.python_path, args.source,
                                           args.pipeline, args.batch, args.threads, args.exact, baseline=baseline,
                                           size=args.size)
            elif name in ("dataloader", "dataloader_draft"):
                ips, d = dataloader_run(args.source, args.pipeline, args.batch, args.threads, args.size,
                                        draft=name == "dataloader_draft")
            elif name == "decode_limit":
                ips, d = decode_limit_run(decode_limit, args.source, args.threads, args.decode_seconds,
                                          DECODE_LIMIT_FILES)
            else:
                ips, d = pillow_run(files, args.threads)
            runs[name].append(ips)
            details[name].append(d)
            print(f"round {r + 1}/{args.rounds}  {name:{width}s} {ips:8.0f} images/s", file=sys.stderr, flush=True)
    report(args, files, runs, details, decode_limit, decode_limit_missing)


def report(args, files, runs, details, decode_limit, decode_limit_missing):
    s = {k: summary(v) for k, v in runs.items()}
    rf = s["ringfeed"]["median"]
    ratio_dl = rf / s["dataloader"]["median"]
    ratio_draft = rf / s["dataloader_draft"]["median"]
    ratio_pil = rf / s["pillow_decode"]["median"]
    mode = "exact" if args.exact else "fast"
    print(f"\n{len(files)} images in {args.source}; pipeline {args.pipeline} ({mode}, size {args.size}), batch "
          f"{args.batch}, {args.threads} threads/workers/processes, {os.cpu_count()} cores, warm page cache, "
          f"median of {args.rounds} interleaved rounds")
    print(f"CLI {args.ringfeed}" + ("" if args.no_python else
          f"; module {details['python_loader'][0]['module']} ({details['python_loader'][0]['version']})")
          + (f"; {decode_limit}" if decode_limit else ""))
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
    print(f"{'contender':42s} {'images/s':>9s} {'min':>7s} {'max':>7s}")
    draft_size = args.size if args.pipeline == "train" else args.size * 256 // 224
    labels = {"ringfeed": "ringfeed bench (float32 NCHW)",
              "ringfeed_baseline": "ringfeed bench, baseline build",
              "python_loader": "ringfeed.Loader, Python (float32 NCHW)",
              "python_loader_baseline": "ringfeed.Loader, Python, baseline",
              "dataloader": f"PyTorch DataLoader(num_workers={args.threads})",
              "dataloader_draft": f"DataLoader, Pillow draft(RGB, {draft_size}px)",
              "pillow_decode": f"Pillow decode only, {args.threads} processes",
              "decode_limit": f"bare decode: TurboJPEG full, {args.threads} thr"}
    for k, label in labels.items():
        if k in s:
            print(f"{label:42s} {s[k]['median']:9.0f} {s[k]['min']:7.0f} {s[k]['max']:7.0f}")
    print(f"ringfeed / DataLoader                 = {ratio_dl:.2f}x")
    print(f"ringfeed / DataLoader, Pillow draft() = {ratio_draft:.2f}x")
    print(f"ringfeed / Pillow decode              = {ratio_pil:.2f}x")
    ratios = {"ratio_vs_dataloader": ratio_dl, "ratio_vs_dataloader_draft": ratio_draft,
              "ratio_vs_pillow_decode": ratio_pil}
    if "decode_limit" in s:
        bare = s["decode_limit"]["median"]
        paired = statistics.median(a / b for a, b in zip(runs["ringfeed"], runs["decode_limit"]))
        ratios.update(ratio_vs_decode_limit=rf / bare, ratio_vs_decode_limit_paired=paired)
        print(f"ringfeed / bare decode                = {rf / bare:.2f}x (goal >= 1.1; median per-round ratio "
              f"{paired:.2f}x; "
              f"{details['decode_limit'][0]['files']} JPEGs of "
              f"{details['decode_limit'][0]['megapixels_per_image']:.2f} MP on average)")
    else:
        ratios["ratio_vs_decode_limit"] = None
        print(f"ringfeed / bare decode                = not measured: {decode_limit_missing}")
    dl_steady = statistics.median(d["steady_images_per_s"] for d in details["dataloader"])
    print(f"(DataLoader steady state after its first batch: {dl_steady:.0f} images/s, "
          f"ringfeed / that = {rf / dl_steady:.2f}x)")
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
                       "size": args.size, "batch": args.batch, "threads": args.threads, "cores": os.cpu_count(),
                       "rounds": args.rounds, "decode_limit": decode_limit,
                       "decode_limit_missing": decode_limit_missing, "dataloader_draft_size": draft_size,
                       **baseline, "summary": s, **ratios,
                       "dataloader_steady_images_per_s": dl_steady, "details": details},
                      fh, indent=1)


if __name__ == "__main__":
    main()
