#!/usr/bin/python3
"""perf/run's measurements for one device profile (run by perf/run, as root).

  suite_measure.py profile --name NAME --small DIR --shards DIR --bin RINGFEED --out FILE.json
                   [--cgroup BLKIO_CGROUP_DIR] [--device /dev/loopN] [--rounds R] [--dataset NAME]
                   [--decode-limit PROGRAM] [--python-path DIR] [--loaders-only] [--draft] ...
  suite_measure.py dataloader SOURCE --pipeline train|val [--workers W] [--batch B] [--draft]
  suite_measure.py pyloader SOURCE --pipeline train|val [--threads T] [--batch B]

`profile` measures, for a cold page cache (sync; echo 3 > drop_caches before
each run) and then a warm one (every file read beforehand):
  fio         fio --opendir=DIR --rw=read --bs=16k --direct=1 --ioengine=io_uring
              --iodepth=32 --file_service_type=random --loops=N (O_DIRECT: cache
              independent, so measured once per layout; --runtime caps it)
  ringfeed    ringfeed bench DIR --json with --pipeline none (buffered and
              --direct), val and train, on the small files and on the tar shards
              (per-sample reads, and --stream: whole shards read sequentially)
  dataloader  PyTorch DataLoader(ImageFolder) with the same transforms
              (perf/compare/compare_loader.py's dataloader_run), small files only;
              with --draft also the same DataLoader whose loader calls
              Pillow's draft() (its DCT scaling; tool "pytorch_draft")
  python      ringfeed.Loader from --python-path (the build's Python
              module), one epoch in a process of its own, small files only
              (perf/compare/compare_loader.py's python_loader_child)
  decode      --decode-limit: perf/decode_limit on the small files' JPEGs,
              TurboJPEG's bare full decode of the files held in memory on as
              many threads as cores (the limit a whole-image decoder meets;
              untimed loading, so measured once per round, cache "memory")
Every loader cell (ringfeed bench, python, dataloader) reports its steady
state as images_per_s: the images after the same warm-up batches for every
contender (WARMUP_BATCHES, ringfeed's batch buffers, at most half the run)
over the time after them; run_images_per_s is the whole short run, start-up
included, and startup_s the start-up alone (opening the loader or scanning
the ImageFolder, then the first batch; for decode_limit, loading the files).
--loaders-only leaves out fio and the raw reads (the large-photo dataset).
--caches cold,warm picks the page-cache states; --no-warm-direct leaves out
the warm `--direct` raw reads (O_DIRECT: the cold run measured them).
With --cgroup every measured command runs inside that blkio cgroup (its pid
is written to cgroup.procs before it execs), so the device throttle applies
to it and to every thread and child it starts. Writes one JSON file: the
profile's settings (and --dataset's name), throttle checks and every
measurement (all rounds).

`dataloader` runs one DataLoader epoch and `pyloader` one ringfeed.Loader
epoch, each printing one JSON line (the subprocesses `profile` starts, so
that they can run inside the cgroup).

Needs Debian's /usr/bin/python3 (torch, torchvision, PIL for the DataLoader).

Beside it: measure_host.py (CPU time, block device, page cache, the cgroup
runner), measure_cells.py (one measurement of each kind and the steady
state), measure_throttle.py (the throttle check) and measure_rounds.py (the
rounds' order and summary).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from measure_cells import (BATCH, WARMUP_BATCHES, dataloader_once, decode_limit_once, fio_once, pyloader_once,
                           ringfeed_once, shuffle_buffer, warmup_batches)
from measure_host import (IMAGE_EXTS, block_stat, busy_seconds, device_read_bytes, drop_caches, list_files, log,
                          runner, tree_bytes, warm)
from measure_rounds import round_order, summarize
from measure_throttle import throttle_check, throttle_summary

HERE = os.path.dirname(os.path.abspath(__file__))


def pyloader_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="suite_measure.py pyloader")
    ap.add_argument("source")
    ap.add_argument("--pipeline", choices=["train", "val"], required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--warmup", type=int, default=1, help="batches before the steady state")
    a = ap.parse_args(argv)
    try:
        import ringfeed  # noqa: F401  (only to say why, when missing)
    except Exception as e:  # ImportError, or a module built for another Python
        print(json.dumps({"status": "n/a", "reason": f"n/a: ringfeed module unavailable ({type(e).__name__}: {e})"}))
        return 0
    sys.path.insert(0, os.path.join(HERE, "..", "compare"))
    from compare_loader import python_loader_child  # what perf/compare/compare_loader.py measures
    python_loader_child(a.source, a.pipeline, a.batch, a.threads, False, warmup=a.warmup)
    return 0


def dataloader_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="suite_measure.py dataloader")
    ap.add_argument("source")
    ap.add_argument("--pipeline", choices=["train", "val"], required=True)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--warmup", type=int, default=1, help="batches before the steady state")
    ap.add_argument("--draft", action="store_true", help="the loader calls Pillow's draft() (DCT scaling)")
    a = ap.parse_args(argv)
    try:
        import torch  # noqa: F401  (only to say why, when missing)
        import torchvision  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        print(json.dumps({"status": "n/a", "reason": f"n/a: PyTorch unavailable ({type(e).__name__}: {e})"}))
        return 0
    sys.path.insert(0, os.path.join(HERE, "..", "compare"))
    from compare_loader import dataloader_run  # the DataLoader code perf/compare/compare_loader.py measures
    ips, d = dataloader_run(a.source, a.pipeline, a.batch, a.workers, draft=a.draft, warmup=a.warmup)
    print(json.dumps({**d, "images_per_s": ips, "draft": a.draft, "workers": a.workers,
                      "batch": a.batch, "torch": torch.__version__, "torchvision": torchvision.__version__}))
    return 0


def profile_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="suite_measure.py profile")
    ap.add_argument("--name", required=True)
    ap.add_argument("--small", help="ImageFolder directory (class folders of JPEGs)")
    ap.add_argument("--shards", help="directory of shard-*.tar")
    ap.add_argument("--bin", required=True, help="the ringfeed CLI")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cgroup", help="blkio cgroup directory to run every measured command in")
    ap.add_argument("--device", help="the (loop) block device the profile throttles, for the throttle check")
    ap.add_argument("--limits", default="", help="text describing the throttle, for the report")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--warm-epochs", type=int, default=3, help="epochs of a warm `--pipeline none` run")
    ap.add_argument("--fio-loops", type=int, default=3)
    ap.add_argument("--fio-runtime", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--no-drop", action="store_true", help="cannot drop caches (not root): warm only")
    ap.add_argument("--quiet-wait", type=float, default=0,
                    help="before each measurement wait up to this many s for an idle second")
    ap.add_argument("--dataset", default="imagenet", help="the dataset's name, for the report (imagenet, large)")
    ap.add_argument("--decode-limit", help="perf/decode_limit: the bare-decode limit on the small files")
    ap.add_argument("--decode-seconds", type=float, default=3.0)
    ap.add_argument("--python-path", help="directory of the ringfeed Python package: ringfeed.Loader rows")
    ap.add_argument("--loaders-only", action="store_true", help="no fio, no raw reads: loaders and the decode limit")
    ap.add_argument("--draft", action="store_true", help="also the DataLoader with Pillow's draft()")
    ap.add_argument("--no-warm-direct", action="store_true",
                    help="no warm `--direct` raw reads (O_DIRECT bypasses the cache: the cold run measured them)")
    ap.add_argument("--caches", default="cold,warm", help="which cache states (cold needs root)")
    a = ap.parse_args(argv)

    run = runner(a.cgroup, a.timeout)
    plain = runner(None, a.timeout)
    workers = os.cpu_count() or 1
    layouts = [(k, d) for k, d in (("small", a.small), ("shards", a.shards)) if d]
    data_bytes = {k: tree_bytes(d) for k, d in layouts}
    help_text = subprocess.run([a.bin, "bench", "--help"], capture_output=True, text=True).stdout
    direct_supported = "--direct" in help_text

    def filesystem(d: str) -> str:
        r = subprocess.run(["findmnt", "-no", "SOURCE,FSTYPE,OPTIONS", "-T", d], capture_output=True, text=True)
        return " ".join(r.stdout.split()) or "?"

    result = {"profile": a.name, "dataset": a.dataset, "limits": a.limits, "cgroup": bool(a.cgroup),
              "device": a.device, "decode_limit": a.decode_limit, "python_path": a.python_path,
              "filesystem": filesystem(layouts[0][1]) if layouts else "?",
              "layouts": {k: {"dir": d, "bytes": data_bytes[k], "files": len(list_files(d))} for k, d in layouts},
              "rounds": a.rounds, "workers": workers, "direct_flag": direct_supported, "measurements": []}
    if not direct_supported:
        log(f"profile {a.name}: `ringfeed bench` has no --direct yet: those rows are n/a")

    if a.device and a.cgroup:
        log(f"profile {a.name}: checking the throttle on {a.device} ({a.limits})")
        files = [f for _, d in layouts for f in list_files(d)]
        t = throttle_check(run, plain, a.device, max(files, key=os.path.getsize))
        result["throttle_check"] = t
        log(f"profile {a.name}: throttle check: {throttle_summary(t)}")

    # What is measured, in order (interleaved per round, every other round reversed: round_order).
    plan = []
    if not a.loaders_only:
        for layout, d in layouts:
            plan.append(("fio", layout, "none", "direct"))
        for layout, d in layouts:
            plan.append(("ringfeed", layout, "none", "buffered"))
            plan.append(("ringfeed", layout, "none", "direct"))
    for pipeline in ("val", "train"):
        for layout, d in layouts:
            plan.append(("ringfeed", layout, pipeline, "buffered"))
            if layout == "shards":
                plan.append(("ringfeed", layout, pipeline, "stream"))
            if layout == "small":
                plan.append(("python", layout, pipeline, "buffered"))
                plan.append(("pytorch", layout, pipeline, "buffered"))
                if a.draft:
                    plan.append(("pytorch_draft", layout, pipeline, "buffered"))
    if a.decode_limit and a.small:
        plan.append(("decode_limit", "small", "decode", "memory"))

    def quiet(limit: float) -> None:
        """Waits up to `limit` s for a half second in which all CPUs together are < 10% busy."""
        waited = 0.0
        while waited < limit:
            b0 = busy_seconds()
            time.sleep(0.5)
            waited += 0.5
            if busy_seconds() - b0 < 0.05 * workers:
                return

    if a.shards:
        # ringfeed caches a tar shard's member index after the first open (it
        # walks every header, which also pulls the shards into the page cache
        # before bench's clock starts): build it once, untimed, so every
        # measured run starts from the same state, the one every later run of
        # a training job sees.
        primed = subprocess.run([a.bin, "bench", a.shards, "--pipeline", "none", "--json"], capture_output=True)
        result["shard_index_primed"] = primed.returncode == 0

    caches = [c for c in a.caches.split(",") if c in ("cold", "warm") and not (c == "cold" and a.no_drop)] or ["warm"]
    result["caches"] = caches
    files = {k: len([f for f in list_files(d) if f.lower().endswith(IMAGE_EXTS)]) for k, d in layouts}
    if "shards" in files:  # the same samples as the small files, packed; unknown (None) without them
        files["shards"] = files.get("small")
    warmup = {k: warmup_batches(n) if n is not None else WARMUP_BATCHES for k, n in files.items()}
    result["warmup_batches"] = warmup
    runs: dict[tuple, list[dict]] = {}
    for cache in caches:
        for rnd in range(a.rounds):
            for tool, layout, pipeline, io in round_order(plan, rnd):
                if tool == "fio" and cache == "warm" and "cold" in caches:
                    continue  # O_DIRECT: the page cache plays no part; measured once
                if tool == "decode_limit" and cache == "cold" and "warm" in caches:
                    continue  # decodes files it loaded into memory, untimed: measured with the warm ones
                if a.no_warm_direct and cache == "warm" and io == "direct" and "cold" in caches:
                    continue  # O_DIRECT: the cold run measured it
                d = dict(layouts)[layout]
                if a.quiet_wait > 0:
                    quiet(a.quiet_wait)
                if cache == "cold":
                    drop_caches()
                else:
                    warm(d)
                stat = block_stat(d)
                read0 = device_read_bytes(stat)
                if tool == "fio":
                    m = fio_once(run, d, a.fio_loops, a.fio_runtime)
                elif tool == "ringfeed":
                    epochs = a.warm_epochs if (cache == "warm" and pipeline == "none") else 1
                    m = ringfeed_once(run, a.bin, d, pipeline, io == "direct", epochs, direct_supported,
                                      stream=io == "stream", warmup=warmup[layout],
                                      shuffle_buffer=shuffle_buffer(files[layout]) if files[layout] else None)
                elif tool == "python":
                    m = pyloader_once(run, d, pipeline, workers, data_bytes[layout], a.python_path,
                                      warmup=warmup[layout])
                elif tool == "decode_limit":
                    m = decode_limit_once(plain, a.decode_limit, d, workers, a.decode_seconds)
                else:
                    m = dataloader_once(run, d, pipeline, workers, data_bytes[layout], draft=tool == "pytorch_draft",
                                        warmup=warmup[layout])
                read1 = device_read_bytes(stat)
                if read0 is not None and read1 is not None:
                    # What the run made the device read (the whole device: on
                    # an unthrottled shared disk, other processes count too).
                    m["device_read_mb"] = (read1 - read0) / 1e6
                if m.get("reason"):  # one note per kind of failure, whatever the profile's paths
                    m["reason"] = m["reason"].replace(d, f"<{layout}>")
                key = (tool, layout, pipeline, io,
                       "direct" if tool == "fio" else ("memory" if tool == "decode_limit" else cache))
                runs.setdefault(key, []).append(m)
                what = f"{a.dataset} {tool} {pipeline if pipeline != 'none' else 'raw read'} {layout}" + \
                       (f" {io}" if (pipeline == "none" and tool != "fio") or io == "stream" else "") + \
                       f" {key[4]}"
                if m.get("status") == "ok":
                    rate = f"{m['images_per_s']:.0f} images/s, " if m.get("images_per_s") else ""
                    if m.get("steady") and m.get("startup_s") is not None and tool != "decode_limit":
                        rate = (f"{m['images_per_s']:.0f} images/s steady (start-up {m['startup_s']:.2f} s, whole "
                                f"run {m['run_images_per_s']:.0f}), ")
                    extra = f", bottleneck {m['bottleneck']}" if m.get("bottleneck") else ""
                    log(f"profile {a.name}: {what} ... {rate}{m.get('mb_per_s', 0):.1f} MB/s{extra}"
                        + (f" (round {rnd + 1}/{a.rounds})" if a.rounds > 1 else ""))
                else:
                    log(f"profile {a.name}: {what} ... {m.get('status')}: {m.get('reason')}")
    for (tool, layout, pipeline, io, cache), rs in runs.items():
        result["measurements"].append({"tool": tool, "layout": layout, "pipeline": pipeline, "io": io,
                                       "cache": cache, **summarize(rs)})
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


def main() -> int:
    commands = {"profile": profile_main, "dataloader": dataloader_main, "pyloader": pyloader_main}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    return commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
