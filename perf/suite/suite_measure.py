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
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HZ = os.sysconf("SC_CLK_TCK")
BATCH = 64
# Warm-up batches left out of every loader's steady state (the same for
# every contender): ringfeed's batch buffers at batch 64 (8: each one's pages
# are touched for the first time once), at most half a run's batches.
WARMUP_BATCHES = 8
# A steady state needs a window: at least this share of the run after the warm-up.
STEADY_MIN_SHARE = 0.25
# A cell whose rounds are further apart than this ((max - min) / median of
# its rate) is flagged in the report: its median is not one number to trust.
SPREAD_LIMIT = 0.15


def warmup_batches(files: int) -> int:
    return max(1, min(WARMUP_BATCHES, -(-files // BATCH) // 2))


def shuffle_buffer(samples: int) -> int | None:
    """--stream's shuffle buffer: bench's 1000 samples, or a quarter of a
    smaller dataset. The first batch waits for the buffer to fill; were it
    the whole dataset, every read would be start-up and the steady state a
    decode from memory."""
    return None if samples >= 4000 else max(1, samples // 4)


_warmup_flag: dict[str, bool] = {}


def warmup_supported(binary: str) -> bool:
    """Whether this `ringfeed bench` takes --warmup-batches (older builds: no)."""
    if binary not in _warmup_flag:
        r = subprocess.run([binary, "bench", "--help"], capture_output=True, text=True)
        _warmup_flag[binary] = "--warmup-batches" in r.stdout
    return _warmup_flag[binary]
IMAGE_EXTS = (".jpg", ".jpeg", ".png")


def log(msg: str) -> None:
    print(f"[perf] {msg}", flush=True)


# --- helpers -----------------------------------------------------------------------


def busy_seconds() -> float:
    """CPU time all CPUs spent busy since boot (user nice system irq softirq)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / HZ


def children_seconds() -> float:
    t = os.times()
    return t.children_user + t.children_system


def block_stat(d: str) -> str | None:
    """/sys/class/block/<dev>/stat of the block device holding d (None if unknown)."""
    r = subprocess.run(["findmnt", "-no", "SOURCE", "-T", d], capture_output=True, text=True)
    name = os.path.basename(os.path.realpath(r.stdout.strip())) if r.stdout.strip() else ""
    path = f"/sys/class/block/{name}/stat"
    return path if name and os.path.exists(path) else None


def device_read_bytes(stat: str | None) -> int | None:
    """Bytes read from the device so far (sectors read × 512)."""
    if stat is None:
        return None
    with open(stat) as f:
        return int(f.read().split()[2]) * 512


def list_files(d: str) -> list[str]:
    out = []
    for root, dirs, names in os.walk(d):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        out += [os.path.join(root, n) for n in names if not n.startswith(".")]
    return sorted(out)


def tree_bytes(d: str) -> int:
    return sum(os.path.getsize(p) for p in list_files(d))


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def warm(d: str) -> None:
    """Reads every file under d (outside any cgroup) into the page cache."""
    for p in list_files(d):
        with open(p, "rb", buffering=0) as f:
            while f.read(1 << 20):
                pass


class runner:
    """Runs commands, inside the blkio cgroup when there is one."""

    def __init__(self, cgroup: str | None, timeout: float):
        self.cgroup = cgroup
        self.timeout = timeout

    def wrap(self, cmd: list[str]) -> list[str]:
        if not self.cgroup:
            return cmd
        # The shell joins the cgroup, then execs the command: the command and
        # every thread or child it starts are throttled from their first I/O.
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', os.path.join(self.cgroup, "cgroup.procs")] + cmd

    def run(self, cmd: list[str], env: dict | None = None) -> dict:
        busy0, own0, t0 = busy_seconds(), children_seconds(), time.perf_counter()
        try:
            p = subprocess.run(self.wrap(cmd), capture_output=True, text=True, timeout=self.timeout, env=env)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc = 124
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = f"timed out after {self.timeout:.0f} s"
        wall = time.perf_counter() - t0
        other = max(0.0, (busy_seconds() - busy0) - (children_seconds() - own0))
        return {"rc": rc, "stdout": out, "stderr": err, "wall_s": wall, "cpu_s": children_seconds() - own0,
                "other_load_cores": other / wall if wall > 0.5 else None}


def last_json(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def why_failed(r: dict) -> str:
    if r["rc"] == 124:
        return r["stderr"]
    tail = [l for l in (r["stderr"] or "").strip().splitlines() if l.strip()]
    reason = tail[-1] if tail else "no output"
    if r["rc"] < 0 or r["rc"] > 128:
        reason = f"crashed (signal {-r['rc'] if r['rc'] < 0 else r['rc'] - 128}); " + reason
    return f"exit {r['rc']}: {reason[:300]}"


# --- the three kinds of measurement -------------------------------------------------


def fio_once(run: runner, d: str, loops: int, runtime: int) -> dict:
    cmd = ["fio", "--name=r", f"--opendir={d}", "--rw=read", "--bs=16k", "--direct=1", "--ioengine=io_uring",
           "--iodepth=32", "--file_service_type=random", f"--loops={loops}", f"--runtime={runtime}",
           "--output-format=json"]
    r = run.run(cmd)
    m = {"command": " ".join(cmd), "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
         "other_load_cores": r["other_load_cores"]}
    text = r["stdout"]
    j = None
    if "{" in text:  # fio prints "fio: opendir added N files" before the JSON
        try:
            j = json.loads(text[text.index("{"):])
        except json.JSONDecodeError:
            j = None
    if r["rc"] != 0 or j is None:
        return {**m, "status": "failed", "reason": why_failed(r)}
    rd = j["jobs"][0]["read"]
    secs = rd["runtime"] / 1000.0
    return {**m, "status": "ok", "mb_per_s": rd["bw_bytes"] / 1e6, "iops": rd["iops"], "bytes": rd["io_bytes"],
            "seconds": secs, "fio_version": j.get("fio version")}


def steady_cell(j: dict, run_rate: float | None, startup: float | None) -> dict:
    """A loader cell's rates from its JSON: images_per_s is the steady state
    (after the warm-up batches: what a training run sees), run_images_per_s
    the whole short run with its start-up, startup_s the start-up alone
    (opening the loader or scanning the dataset, and the first batch). A
    program that reports no steady state keeps its whole-run rate (steady
    false)."""
    steady = j.get("steady_images_per_s")
    window, whole = j.get("steady_seconds"), j.get("seconds")
    if (isinstance(window, (int, float)) and isinstance(whole, (int, float)) and whole > 0
            and window < STEADY_MIN_SHARE * whole):
        # The rest was decoded before the warm-up ended (a dataset smaller than
        # the prefetch, or read whole by --stream): no steady state to see.
        return {"images_per_s": run_rate, "run_images_per_s": run_rate, "startup_s": startup, "steady": False,
                "steady_note": f"steady window {window:.3f} s of a {whole:.2f} s run: whole-run rate"}
    if isinstance(steady, (int, float)) and steady == steady:  # not None, not NaN
        return {"images_per_s": steady, "run_images_per_s": run_rate, "startup_s": startup, "steady": True,
                "warmup_batches": j.get("warmup_batches"), "first_batch_s": j.get("first_batch_s"),
                "steady_seconds": window}
    return {"images_per_s": run_rate, "run_images_per_s": run_rate, "startup_s": startup, "steady": False}


def startup_of(j: dict) -> float | None:
    if not isinstance(j.get("first_batch_s"), (int, float)):
        return None
    return (j.get("open_s") or 0.0) + j["first_batch_s"]


def ringfeed_once(run: runner, binary: str, src: str, pipeline: str, direct: bool, epochs: int,
                  direct_supported: bool, stream: bool = False, warmup: int | None = None,
                  shuffle_buffer: int | None = None) -> dict:
    cmd = [binary, "bench", src, "--pipeline", pipeline, "--json", "--epochs", str(epochs)]
    if pipeline != "none":
        cmd += ["--batch", str(BATCH), "--device", "-1"]
        if warmup is not None and warmup_supported(binary):
            cmd += ["--warmup-batches", str(warmup)]
    if stream:
        cmd.append("--stream")  # tar shards read front to back, shuffle buffer (WebDataset's recipe)
        if shuffle_buffer:
            cmd += ["--shuffle-buffer", str(shuffle_buffer)]
    if direct:
        cmd.append("--direct")
    m = {"command": " ".join(cmd)}
    if direct and not direct_supported:
        return {**m, "status": "n/a", "reason": "n/a: flag missing (`ringfeed bench --help` has no --direct)"}
    r = run.run(cmd)
    m.update(wall_s=r["wall_s"], cpu_s=r["cpu_s"], other_load_cores=r["other_load_cores"])
    j = last_json(r["stdout"])
    if r["rc"] != 0 or j is None:
        reason = why_failed(r)
        if direct and ("--direct" in r["stderr"] and "not expected" in r["stderr"]):
            return {**m, "status": "n/a", "reason": "n/a: flag missing (" + reason + ")"}
        return {**m, "status": "failed", "reason": reason}
    skipped = j.get("skipped") or []
    out = {**m, "status": "ok", "images": j.get("images", 0), "seconds": j.get("seconds"),
           "wall_images_per_s": j.get("images", 0) / r["wall_s"] if r["wall_s"] > 0 else None,
           "images_per_s": j.get("images_per_s"), "mb_per_s": j.get("mb_per_s"), "bytes": j.get("bytes"),
           "backend": j.get("backend"), "direct": j.get("direct"), "bottleneck": j.get("bottleneck"),
           "threads": j.get("threads"), "io_depth": j.get("io_depth"), "stages": j.get("stages"),
           "mode": j.get("mode"), "skipped": len(skipped)}
    if pipeline != "none":
        out.update(steady_cell(j, j.get("images_per_s"), startup_of(j)))
    if skipped:
        out["skipped_example"] = f"{skipped[0].get('path')}: {skipped[0].get('reason')}"
    if not j.get("images"):
        out["status"] = "failed"
        out["reason"] = f"no image delivered ({len(skipped)} skipped, e.g. {out.get('skipped_example', '?')})"
    return out


def dataloader_once(run: runner, src: str, pipeline: str, workers: int, data_bytes: int,
                    draft: bool = False, warmup: int = 1) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "dataloader", src, "--pipeline", pipeline,
           "--workers", str(workers), "--batch", str(BATCH), "--warmup", str(warmup)] + (["--draft"] if draft else [])
    r = run.run(cmd)
    m = {"command": " ".join(cmd), "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
         "other_load_cores": r["other_load_cores"]}
    j = last_json(r["stdout"])
    if j is None or r["rc"] != 0:
        return {**m, "status": "failed", "reason": why_failed(r)}
    if j.get("status") == "n/a":
        return {**m, **j}
    return {**m, "status": "ok", **j, "bytes": data_bytes, "mb_per_s": data_bytes / 1e6 / j["seconds"],
            **steady_cell(j, j["images_per_s"], startup_of(j))}


def pyloader_once(run: runner, src: str, pipeline: str, threads: int, data_bytes: int,
                  python_path: str | None, warmup: int = 1) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "pyloader", src, "--pipeline", pipeline,
           "--threads", str(threads), "--batch", str(BATCH), "--warmup", str(warmup)]
    m = {"command": " ".join(cmd)}
    if not python_path:
        return {**m, "status": "n/a", "reason": "n/a: no ringfeed Python module built (ringfeed_python)"}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (python_path, env.get("PYTHONPATH")) if p)
    r = run.run(cmd, env=env)
    m.update(command=f"PYTHONPATH={python_path} " + m["command"], wall_s=r["wall_s"], cpu_s=r["cpu_s"],
             other_load_cores=r["other_load_cores"])
    j = last_json(r["stdout"])
    if j is None or r["rc"] != 0:
        return {**m, "status": "failed", "reason": why_failed(r)}
    if j.get("status") == "n/a":
        return {**m, **j}
    return {**m, "status": "ok", "images": j["images"], "seconds": j["seconds"],
            "steady_images_per_s": j.get("steady_images_per_s"),
            "bottleneck": j.get("bottleneck"), "backend": j.get("backend"), "threads": j.get("threads"),
            "module": j.get("module"), "bytes": data_bytes, "mb_per_s": data_bytes / 1e6 / j["seconds"],
            **steady_cell(j, j["images"] / j["seconds"], startup_of(j))}


def decode_limit_once(run: runner, program: str, src: str, threads: int, seconds: float) -> dict:
    cmd = [program, src, "--threads", str(threads), "--seconds", str(seconds)]
    r = run.run(cmd)
    m = {"command": " ".join(cmd), "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
         "other_load_cores": r["other_load_cores"]}
    j = last_json(r["stdout"])
    if j is None or r["rc"] != 0:
        return {**m, "status": "failed", "reason": why_failed(r)}
    return {**m, "status": "ok", "images": j["images"], "seconds": j["seconds"], "images_per_s": j["images_per_s"],
            "threads": j["threads"], "cpu_cores": j["cpu_cores"], "files": j["files"],
            "megapixels_per_image": j["megapixels_per_image"], "startup_s": j.get("load_s"), "steady": True,
            "mb_per_s": j["bytes"] / j["files"] * j["images_per_s"] / 1e6 if j["files"] else None}


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


# --- throttle check ------------------------------------------------------------------


def throttle_check(run: runner, plain: runner, device: str, big_file: str) -> dict:
    """Measures what the throttle lets through, with fio on one big file of
    the profile's file system (a shard: real data, where the sparse loop
    image's holes would read as free zeros), inside the cgroup and outside:
      seq_1m_libaio   1 MiB sequential O_DIRECT reads, libaio, depth 4: the
                      bandwidth limit (or IOPS × 512 KiB: the loop device
                      splits larger requests and blk-throttle counts each part)
      seq_1m_uring    the same through io_uring (fio's and ringfeed's engine):
                      is it throttled alike? (On the raw loop device this
                      kernel gives io_uring half the libaio bandwidth: a
                      REQ_NOWAIT request that must be split is charged,
                      refused with EAGAIN and re-issued from an io-wq worker.)
      rand_16k        16 KiB random O_DIRECT reads, io_uring, depth 32: the
                      IOPS limit
      buffered        cold buffered sequential passes over ~256 MB (fio drops
                      the file's cache before each): are page-cache reads
                      throttled too (they are when the reading task issues
                      them, as readahead does)?
    Timed runs skip their first second (the throttle lets a burst through)."""
    def fio(r: runner, name: str, args: list[str], timed: bool = True) -> dict:
        cmd = ["fio", f"--name={name}", f"--filename={big_file}", "--readonly", "--output-format=json"] + args
        if timed:
            cmd += ["--time_based", "--ramp_time=1", "--runtime=2"] if r.cgroup else ["--time_based", "--runtime=1"]
        res = r.run(cmd)
        try:
            rd = json.loads(res["stdout"][res["stdout"].index("{"):])["jobs"][0]["read"]
            return {"mb_per_s": rd["bw_bytes"] / 1e6, "iops": rd["iops"]}
        except (ValueError, KeyError, IndexError, json.JSONDecodeError):
            return {"error": why_failed(res)}

    seq = ["--direct=1", "--rw=read", "--bs=1m", "--iodepth=4"]
    rand = ["--direct=1", "--rw=randread", "--bs=16k", "--iodepth=32", "--ioengine=io_uring"]
    loops = max(1, (256 << 20) // max(os.path.getsize(big_file), 1))
    buffered = ["--direct=0", "--rw=read", "--bs=1m", "--invalidate=1", "--ioengine=psync", f"--loops={loops}"]
    out = {"device": device, "file": big_file, "file_bytes": os.path.getsize(big_file)}
    for label, r in (("", run), ("_unthrottled", plain)):
        out["seq_1m_libaio" + label] = fio(r, "seq", seq + ["--ioengine=libaio"])
        out["seq_1m_uring" + label] = fio(r, "seq", seq + ["--ioengine=io_uring"])
        out["rand_16k" + label] = fio(r, "rand", rand)
        drop_caches()
        out["buffered" + label] = fio(r, "buffered", buffered, timed=False)
    return out


def throttle_summary(t: dict) -> str:
    g = lambda k, f: t.get(k, {}).get(f, float("nan"))  # noqa: E731
    return (f"1 MiB O_DIRECT reads {g('seq_1m_libaio', 'mb_per_s'):.0f} MB/s with libaio, "
            f"{g('seq_1m_uring', 'mb_per_s'):.0f} MB/s with io_uring (unthrottled "
            f"{g('seq_1m_libaio_unthrottled', 'mb_per_s'):.0f}); 16 KiB random reads "
            f"{g('rand_16k', 'iops'):.0f} IOPS (unthrottled {g('rand_16k_unthrottled', 'iops'):.0f}); "
            f"buffered cold sequential read {g('buffered', 'mb_per_s'):.0f} MB/s (unthrottled "
            f"{g('buffered_unthrottled', 'mb_per_s'):.0f})")


# --- one profile --------------------------------------------------------------------


def round_order(plan: list[tuple], rnd: int) -> list[tuple]:
    """The cells of round `rnd` in the order they run: the plan's order in
    even rounds, reversed in odd ones. A cell measured right after the same
    neighbour every round would carry whatever that neighbour leaves behind
    (or a slow drift of the machine) into every round alike, and its rounds
    would agree on a wrong number; alternating the order (ABBA) changes each
    cell's neighbours and spreads a drift evenly, so such a cell's rounds
    disagree and the report flags it (SPREAD_LIMIT)."""
    return list(plan) if rnd % 2 == 0 else list(reversed(plan))


def rounds_spread(vals: list[float]) -> float | None:
    """How far a cell's rounds are apart: (max - min) / median; None with
    fewer than two rounds (nothing to compare)."""
    if len(vals) < 2:
        return None
    mid = statistics.median(vals)
    return (max(vals) - min(vals)) / mid if mid > 0 else None


def summarize(runs: list[dict]) -> dict:
    """Median over the rounds that succeeded; the first failure's reason
    otherwise. `spread`: how far the rounds of the cell's rate (images/s,
    else MB/s) are apart; `rounds_disagree` when it exceeds SPREAD_LIMIT."""
    ok = [r for r in runs if r.get("status") == "ok"]
    if not ok:
        first = runs[0] if runs else {"status": "failed", "reason": "not run"}
        return {"status": first.get("status", "failed"), "reason": first.get("reason"), "runs": runs}
    s = {"status": "ok", "runs": runs, "rounds_ok": len(ok)}
    for key in ("images_per_s", "mb_per_s", "iops", "seconds", "run_images_per_s", "startup_s"):
        vals = [r[key] for r in ok if isinstance(r.get(key), (int, float))]
        if vals:
            s[key] = statistics.median(vals)
            s[key + "_min"], s[key + "_max"] = min(vals), max(vals)
    rate = "images_per_s" if "images_per_s" in s else "mb_per_s"
    spread = rounds_spread([r[rate] for r in ok if isinstance(r.get(rate), (int, float))])
    if spread is not None:
        s["spread"] = spread
        s["rounds_disagree"] = spread > SPREAD_LIMIT
    for key in ("bottleneck", "backend", "direct", "images", "bytes", "threads", "mode", "skipped",
                "steady_images_per_s", "torch", "device_read_mb", "wall_images_per_s", "megapixels_per_image",
                "files", "cpu_cores", "module", "steady", "warmup_batches", "steady_note"):
        if key in ok[len(ok) // 2]:
            s[key] = ok[len(ok) // 2][key]
    loads = [r["other_load_cores"] for r in runs if isinstance(r.get("other_load_cores"), (int, float))]
    if loads:
        s["other_load_cores_max"] = max(loads)
    return s


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
