#!/usr/bin/env python3
"""perf/compare/compare_object_store.py — reading tar shards from a local S3 server.

    /usr/bin/python3 perf/compare/compare_object_store.py [--images N] [--depth D] [--out results.json]

One run on this machine, loopback only: s3rver (tests/support/object_store.py)
serves WebDataset shards made by `ringfeed gen` + `ringfeed pack`, and the
same sample byte ranges (one tar member each) are fetched by
  1. ringfeed's s3:// source (`ringfeed bench --pipeline none`, depth D):
     one libcurl multi handle, keep-alive connections, signed Range GETs;
  2. `curl` processes, D at a time, one per range (what shelling out to
     curl / `aws s3 cp` costs);
  3. boto3 (Debian's python3-boto3) get_object(Range=…) from a pool of D
     threads;
and the train pipeline (`ringfeed bench --pipeline train`) reads the shards
over s3:// and from local disk, one request per sample and with --stream
(each shard front to back in 8 MiB parts, four at once). Reported:
samples/s, MB/s and ratios.

s3rver is a Node process on this machine; a real S3 endpoint takes no CPU
from the loader. So by default (--server-cpus 1) s3rver runs on the last
CPU and every reader, ringfeed and the baselines alike, on the others
(ringfeed with --threads set to their number): the train rows then compare
the same decode cores reading over s3:// and from local disk.
--server-cpus 0 shares every core (the earlier, pessimistic setup).
--repeat R runs each train row R times, interleaved, and keeps the medians.
RINGFEED_BIN names the binary (default build/default/bin/ringfeed).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))
import object_store  # noqa: E402


def ringfeed_bin() -> str:
    return os.environ.get("RINGFEED_BIN", str(ROOT / "build" / "default" / "bin" / "ringfeed"))


def run(*args, env=None) -> str:
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, args))} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def bench(source: str, pipeline: str, depth: int, env, *extra) -> dict:
    out = run(ringfeed_bin(), "bench", source, "--pipeline", pipeline, "--io-depth", depth, "--json", *extra, env=env)
    return json.loads(out.strip().splitlines()[-1])


def median_bench(runs: list[dict]) -> dict:
    """The run with the median images/s, with every run's rate kept."""
    ordered = sorted(runs, key=lambda r: r["images_per_s"])
    return dict(ordered[len(ordered) // 2], runs_images_per_s=[r["images_per_s"] for r in runs])


def split_cpus(server_cpus: int) -> tuple[set[int], set[int]]:
    """(the server's CPUs, the readers' CPUs): the last `server_cpus` of
    this process's, and the rest; both all of them when 0 (or too few)."""
    mine = sorted(os.sched_getaffinity(0))
    if server_cpus <= 0 or server_cpus >= len(mine):
        return set(mine), set(mine)
    return set(mine[-server_cpus:]), set(mine[:-server_cpus])


def train_row(title: str, s3: dict, local: dict) -> dict:
    """Prints and returns one train comparison: s3:// vs local disk."""
    ratio = s3["images_per_s"] / local["images_per_s"]
    print(f"\n{title}: s3:// {s3['images_per_s']:.0f} img/s, local disk {local['images_per_s']:.0f} img/s: "
          f"ratio {ratio:.2f} (bottleneck s3: {s3.get('bottleneck')}, local: {local.get('bottleneck')})")
    return {"s3_images_per_s": s3["images_per_s"], "local_images_per_s": local["images_per_s"], "ratio": ratio,
            "s3_bottleneck": s3.get("bottleneck"), "local_bottleneck": local.get("bottleneck"),
            "s3_runs": s3.get("runs_images_per_s"), "local_runs": local.get("runs_images_per_s")}


def member_ranges(shards: list[pathlib.Path]) -> list[tuple[str, int, int]]:
    """(shard name, first byte, size) of every image member, in order."""
    out = []
    for s in shards:
        with tarfile.open(s) as t:
            for m in t.getmembers():
                if m.isfile() and not m.name.endswith(".cls"):
                    out.append((s.name, m.offset_data, m.size))
    return out


def timed(fn, items, workers: int) -> float:
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for _ in pool.map(fn, items):
            pass
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--depth", type=int, default=32)
    ap.add_argument("--shard-mb", type=int, default=16)
    ap.add_argument("--curl-ranges", type=int, default=400, help="ranges the curl-process baseline fetches")
    ap.add_argument("--server-cpus", type=int, default=1, help="CPUs kept for s3rver alone (0: shared)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each train row (medians)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    server_cpus, reader_cpus = split_cpus(args.server_cpus)
    threads = ["--threads", len(reader_cpus)]
    work = pathlib.Path(tempfile.mkdtemp(prefix="rf-objstore-perf-"))
    try:
        run(ringfeed_bin(), "gen", work / "data", "--images", args.images, "--classes", 10, "--seed", 3)
        run(ringfeed_bin(), "pack", work / "data" / "train", work / "shards", "--shard-mb", args.shard_mb)
        shards = sorted((work / "shards").glob("*.tar"))
        ranges = member_ranges(shards)
        total_bytes = sum(r[2] for r in ranges)
        # s3rver and its threads inherit the affinity this process has when it starts them.
        os.sched_setaffinity(0, server_cpus)
        s3 = object_store.S3rver(work / "s3", buckets=["data"]).start()
        os.sched_setaffinity(0, reader_cpus)  # the readers from here on: ringfeed, curl, boto3
        with s3:
            s3.populate("data", work / "shards", prefix="shards/")
            env = dict(os.environ, AWS_ENDPOINT_URL=s3.endpoint, AWS_REGION=s3.region,
                       AWS_ACCESS_KEY_ID=s3.access_key_id, AWS_SECRET_ACCESS_KEY=s3.secret_access_key,
                       AWS_EC2_METADATA_DISABLED="true")
            first, last = shards[0].stem.split("-")[-1], shards[-1].stem.split("-")[-1]
            pattern = f"shards/shard-{{{first}..{last}}}.tar"
            rows = {}

            r = bench(f"s3://data/{pattern}", "none", args.depth, env, *threads)
            rows["ringfeed s3:// (libcurl multi)"] = (r["images"], r["seconds"], r["bytes"])

            curl = shutil.which("curl")
            if curl:
                subset = ranges[: args.curl_ranges]

                def fetch_curl(item):
                    name, off, size = item
                    subprocess.run([curl, "-sf", "-o", "/dev/null", "-r", f"{off}-{off + size - 1}",
                                    f"{s3.endpoint}/data/shards/{name}"], check=True)
                secs = timed(fetch_curl, subset, args.depth)
                rows[f"curl processes (first {len(subset)} ranges)"] = (len(subset), secs, sum(x[2] for x in subset))

            client = s3.client()

            def fetch_boto(item):
                name, off, size = item
                body = client.get_object(Bucket="data", Key=f"shards/{name}",
                                         Range=f"bytes={off}-{off + size - 1}")["Body"].read()
                assert len(body) == size
            secs = timed(fetch_boto, ranges, args.depth)
            rows["boto3, thread pool"] = (len(ranges), secs, total_bytes)

            local = str(work / "shards" / pattern.removeprefix("shards/"))
            runs: dict[str, list[dict]] = {"s3": [], "local": [], "stream_s3": [], "stream_local": []}
            for _ in range(max(1, args.repeat)):  # interleaved: drift in the machine hits all four alike
                runs["s3"].append(bench(f"s3://data/{pattern}", "train", args.depth, env, *threads))
                runs["local"].append(bench(local, "train", args.depth, env, *threads))
                # --stream: each shard read front to back in 8 MiB parts, up to 4 at once.
                runs["stream_s3"].append(bench(f"s3://data/{pattern}", "train", args.depth, env, *threads, "--stream"))
                runs["stream_local"].append(bench(local, "train", args.depth, env, *threads, "--stream"))
            train_s3, train_local, stream_s3, stream_local = (median_bench(runs[k]) for k in runs)

        base = rows["ringfeed s3:// (libcurl multi)"]
        base_rate = base[0] / base[1]
        print(f"\nloopback, s3rver, {len(shards)} shards, {len(ranges)} samples, "
              f"{total_bytes / 1e6:.1f} MB, depth {args.depth}, {os.cpu_count()} cores; "
              f"s3rver on CPUs {sorted(server_cpus)}, readers on {sorted(reader_cpus)}\n")
        print("| reader | samples | seconds | samples/s | MB/s | vs ringfeed |")
        print("|---|---:|---:|---:|---:|---:|")
        result = {"depth": args.depth, "samples": len(ranges), "bytes": total_bytes, "rows": {},
                  "server_cpus": sorted(server_cpus), "reader_cpus": sorted(reader_cpus), "repeat": args.repeat}
        for name, (n, secs, nbytes) in rows.items():
            rate = n / secs
            print(f"| {name} | {n} | {secs:.2f} | {rate:.0f} | {nbytes / secs / 1e6:.1f} | {rate / base_rate:.2f} |")
            result["rows"][name] = {"samples": n, "seconds": secs, "samples_per_s": rate,
                                    "mb_per_s": nbytes / secs / 1e6}
        result["train"] = train_row("train pipeline", train_s3, train_local)
        result["train_stream"] = train_row("train pipeline, --stream", stream_s3, stream_local)
        result["train_stream"]["s3_vs_local_random_access"] = stream_s3["images_per_s"] / train_local["images_per_s"]
        print(f"s3:// --stream vs local random access: {result['train_stream']['s3_vs_local_random_access']:.2f}")
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
