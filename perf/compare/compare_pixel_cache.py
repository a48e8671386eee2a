#!/usr/bin/python3
"""The pixel cache (issue 40) against the bare decode and against ringfeed
without it, in one run, on the same JPEGs and cores.

Warm (page cache warm), interleaved rounds, the order rotated each round:

  bare decode     perf/decode_limit DIR --threads T --files N: TurboJPEG's
                  full decode of the JPEGs held in memory, nothing else
  no cache        `ringfeed bench DIR --pipeline train --threads T --epochs 3
                  --json`: fast mode, epochs 2 and 3 (median)
  no cache exact  the same with --exact: the batches the cache gives
  pixel cache     the same with --cache-dir D --cache pixels (D filled once
                  by `ringfeed cache build` before the rounds): epochs 2-3
  ..., uint8      no cache and pixel cache with --output uint8 (NHWC bytes,
                  what a GPU run takes: normalized on the device); the
                  others make float32 NCHW, ToTensor + Normalize on the CPU
  cache, epoch 1  a run that starts with an empty D: epoch 1 decodes and
                  fills (what the first epoch of training pays)

Cold (page cache dropped before each run, needs root; --no-cold skips it),
--rounds paired rounds, the order swapped each round:
  pixel cache --direct: the cache read with O_DIRECT, three epochs: the
  first's images/s (cold metadata too, pipeline filling) and the median of
  the next two (O_DIRECT: the disk still serves every read); fio random
  reads of the cache's pack file (the same file system) with --bs the mean
  bytes a hit read (the stripes holding its crop's rows) rounded up to
  4 KiB, io_uring, O_DIRECT, iodepth = ringfeed's io depth. The ratios are
  taken within each round, then their median.

Disk cost: `ringfeed cache info D --json`: bytes per image, and the
projection for ImageNet-1k train (1,281,167 images) at this set's mean
size and at ImageNet's (about 400x350 after decode: 0.42 MB per image).
--disk-only measures it instead on `ringfeed gen --photos imagenet`
(ImageNet's mix of sizes) and `--photos large` (1-4 MP photos).

  perf/compare/compare_pixel_cache.py --out perf/results/pixel_cache_2core.json

The source: --source DIR, else a set of 3,000 real-photo JPEGs around
500x375 made once (perf/common/photo_set.py) in /tmp/rf-photos3000.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "perf", "common"))
import photo_set  # noqa: E402

IMAGENET_TRAIN = 1_281_167


def first_existing(*paths):
    return next((p for p in paths if os.path.exists(p)), None)


def run_json(cmd, whole=False):
    """The JSON a command prints last (`whole`: its whole stdout from the first '{', as fio's)."""
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed ({' '.join(map(str, cmd))}):\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    if whole:
        return json.loads(done.stdout[done.stdout.index("{"):])
    return json.loads(done.stdout.strip().splitlines()[-1])


def emit(result, out):
    """Prints `result` as JSON, and writes it to `out` when given."""
    text = json.dumps(result, indent=2)
    print(text)
    if out:
        with open(out, "w") as fh:
            fh.write(text + "\n")


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as fh:
        fh.write("3\n")


def bench(args, *extra, epochs=3):
    cmd = [args.ringfeed, "bench", args.source, "--pipeline", "train", "--batch", "64", "--threads",
           str(args.threads), "--device", "-1", "--epochs", str(epochs), "--json", *extra]
    return run_json(cmd)


def later_epochs(out):
    rates = out["epoch_images_per_s"]
    return statistics.median(rates[1:]) if len(rates) > 1 else rates[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", help="ImageFolder of JPEGs (default: the real-photo set, made once)")
    ap.add_argument("--images", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--cache-dir", help="where the cache is built (default: a temporary directory, removed)")
    ap.add_argument("--ringfeed", default=first_existing(*(os.path.join(REPO, "build", p, "bin", "ringfeed")
                                                           for p in ("release", "default"))))
    ap.add_argument("--decode-limit", default=first_existing(*(os.path.join(REPO, "build", p, "perf", "decode_limit")
                                                               for p in ("release", "default"))))
    ap.add_argument("--no-cold", action="store_true", help="leave out the cold (O_DIRECT, caches dropped) part")
    ap.add_argument("--cold-only", action="store_true", help="only the cold part (against fio)")
    ap.add_argument("--out", help="JSON results here")
    ap.add_argument("--disk-only", action="store_true",
                    help="only the disk cost: gen --photos imagenet and large, cache build, bytes per image")
    args = ap.parse_args()
    if not args.ringfeed or not args.decode_limit:
        sys.exit("needs build/release (or default)/bin/ringfeed and perf/decode_limit: "
                 "cmake --build --preset release")
    if args.disk_only:
        return emit({"disk_cost": disk_cost(args)}, args.out)
    if not args.source:
        args.source = photo_set.ensure_photo_set("/tmp/rf-photos3000", args.images)
    own_dir = args.cache_dir is None
    cache = args.cache_dir or tempfile.mkdtemp(prefix="rf-pixel-cache-")
    fill_dir = tempfile.mkdtemp(prefix="rf-pixel-fill-")
    try:
        t0 = time.time()
        subprocess.run([args.ringfeed, "cache", "build", args.source, "--cache-dir", cache, "--threads",
                        str(args.threads)], check=True, stdout=subprocess.DEVNULL)
        build_s = time.time() - t0
        info = run_json([args.ringfeed, "cache", "info", cache, "--json"])
        if args.cold_only:
            return emit({"source": args.source, "threads": args.threads, "cold": cold(args, cache, info)}, args.out)
        contenders = {
            "bare decode": lambda: run_json([args.decode_limit, args.source, "--threads", str(args.threads),
                                             "--seconds", "5", "--files", str(args.images)])["images_per_s"],
            "no cache": lambda: later_epochs(bench(args)),
            "no cache, exact": lambda: later_epochs(bench(args, "--exact")),
            "pixel cache": lambda: later_epochs(bench(args, "--cache-dir", cache, "--cache", "pixels")),
            # uint8 NHWC batches: what a GPU run takes (normalized on the device)
            "no cache, uint8": lambda: later_epochs(bench(args, "--output", "uint8")),
            "pixel cache, uint8": lambda: later_epochs(bench(args, "--cache-dir", cache, "--cache", "pixels",
                                                             "--output", "uint8")),
        }

        def fill_epoch():
            shutil.rmtree(fill_dir, ignore_errors=True)
            return bench(args, "--cache-dir", fill_dir, "--cache", "pixels", epochs=1)["epoch_images_per_s"][0]

        contenders["cache, epoch 1 (fills)"] = fill_epoch
        names = list(contenders)
        runs = {n: [] for n in names}
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                runs[n].append(contenders[n]())
                print(f"round {r + 1}/{args.rounds} {n}: {runs[n][-1]:.0f} images/s", file=sys.stderr)
        med = {n: statistics.median(v) for n, v in runs.items()}
        result = {
            "source": args.source, "images": args.images, "threads": args.threads, "rounds": args.rounds,
            "images_per_s": med, "runs": runs,
            "ratios": {
                "pixel cache / bare decode": med["pixel cache"] / med["bare decode"],
                "pixel cache / no cache": med["pixel cache"] / med["no cache"],
                "pixel cache / no cache, exact": med["pixel cache"] / med["no cache, exact"],
                "pixel cache, uint8 / bare decode": med["pixel cache, uint8"] / med["bare decode"],
                "pixel cache, uint8 / no cache, uint8": med["pixel cache, uint8"] / med["no cache, uint8"],
                "epoch 1 (fills) / no cache, exact": med["cache, epoch 1 (fills)"] / med["no cache, exact"],
            },
            "goal": "pixel cache >= 3x bare decode (epochs >= 2, page cache warm)",
            "cache_build_s": build_s, "cache": info,
            "disk": {
                "bytes_per_image": info["bytes_per_image"],
                "imagenet_1k_train_tb_at_this_size": info["bytes_per_image"] * IMAGENET_TRAIN / 1e12,
                "imagenet_1k_train_tb_at_400x350": 4096 * -(-400 * 350 * 3 // 4096) * IMAGENET_TRAIN / 1e12,
            },
        }
        result["goal_met"] = {"float32": result["ratios"]["pixel cache / bare decode"] >= 3,
                              "uint8": result["ratios"]["pixel cache, uint8 / bare decode"] >= 3}
        if not args.no_cold:
            result["cold"] = cold(args, cache, info)
        emit(result, args.out)
    finally:
        shutil.rmtree(fill_dir, ignore_errors=True)
        if own_dir:
            shutil.rmtree(cache, ignore_errors=True)


def disk_cost(args):
    """Bytes per image of the cache for `ringfeed gen --photos imagenet`
    (ImageNet's mix of sizes) and `--photos large` (1-4 MP photos), beside
    their JPEGs' bytes; the projection for ImageNet-1k's train set."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="rf-disk-cost-") as tmp:
        for kind, images in (("imagenet", 200), ("large", 100)):
            data, cache = os.path.join(tmp, kind), os.path.join(tmp, kind + "-cache")
            subprocess.run([args.ringfeed, "gen", data, "--images", str(images), "--classes", "2", "--seed", "3",
                            "--photos", kind], check=True, stdout=subprocess.DEVNULL)
            train = os.path.join(data, "train")
            jpeg = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(train) for f in fs)
            subprocess.run([args.ringfeed, "cache", "build", train, "--cache-dir", cache, "--threads",
                            str(args.threads)], check=True, stdout=subprocess.DEVNULL)
            info = run_json([args.ringfeed, "cache", "info", cache, "--json"])
            out[kind] = {"images": info["entries"], "jpeg_bytes_per_image": jpeg / info["entries"],
                         "cache_bytes_per_image": info["bytes_per_image"],
                         "cache_to_jpeg": info["bytes_per_image"] * info["entries"] / jpeg}
    out["imagenet"]["imagenet_1k_train_tb"] = out["imagenet"]["cache_bytes_per_image"] * IMAGENET_TRAIN / 1e12
    return out


def cold(args, cache, info):
    """The cache read with O_DIRECT after dropping the page cache, beside
    fio's random O_DIRECT reads of its pack at the same size: --rounds
    paired rounds, the order swapped each round (this disk's speed drifts
    by up to 2x over minutes), the ratios taken within a round."""
    try:
        drop_caches()
    except OSError as e:
        return {"skipped": f"cannot drop the page cache ({e}): needs root"}
    packs = [os.path.join(cache, "pixels", f) for f in os.listdir(os.path.join(cache, "pixels")) if f.endswith(".data")]
    pack = max(packs, key=os.path.getsize)
    rounds = []

    def ringfeed_run():
        drop_caches()
        # Three epochs: the first is cold in every sense (the dataset's
        # metadata too) and includes filling the pipeline; O_DIRECT reads
        # never touch the page cache, so epochs 2-3 read the disk as well.
        out = bench(args, "--cache-dir", cache, "--cache", "pixels", "--direct", epochs=3)
        pc = out["pixel_cache"]
        per_hit = pc["bytes_read"] / max(pc["hits"], 1)
        rates = out["epoch_images_per_s"]
        return {"epoch1_images_per_s": rates[0], "later_images_per_s": statistics.median(rates[1:]),
                "bytes_read_per_hit": per_hit, "cache_read_mb_per_s": pc["read_mb_per_s"],
                "read_ms": pc.get("read_ms"), "direct": pc["direct"], "io_depth": out["io_depth"]}

    def fio_run(block, depth):
        drop_caches()
        fio = run_json(["fio", "--name=r", f"--filename={pack}", "--rw=randread", f"--bs={block}", "--direct=1",
                        "--ioengine=io_uring", f"--iodepth={depth}", "--time_based", "--runtime=5",
                        "--output-format=json"], whole=True)
        job = fio["jobs"][0]["read"]
        return {"iops": job["iops"], "mb_per_s": job["bw_bytes"] / 1e6, "lat_ms": job["clat_ns"]["mean"] / 1e6}

    first = ringfeed_run()  # sets the block size: a hit reads the stripes its crop's rows lie in
    bs = -(-int(first["bytes_read_per_hit"]) // 4096) * 4096
    for r in range(args.rounds):
        if r % 2 == 0:
            rf = first if r == 0 else ringfeed_run()
            fio = fio_run(bs, rf["io_depth"])
        else:
            fio = fio_run(bs, first["io_depth"])
            rf = ringfeed_run()
        rounds.append({"ringfeed": rf, "fio": fio,
                       "epoch1_to_fio": rf["epoch1_images_per_s"] / fio["iops"],
                       "later_to_fio": rf["later_images_per_s"] / fio["iops"]})
        print(f"cold round {r + 1}/{args.rounds}: ringfeed {rf['epoch1_images_per_s']:.0f} (epoch 1), "
              f"{rf['later_images_per_s']:.0f} (epochs 2-3) images/s, fio {fio['iops']:.0f} reads/s",
              file=sys.stderr)
    med = statistics.median
    return {
        "ringfeed_direct": first["direct"], "io_depth": first["io_depth"],
        "bytes_read_per_hit": first["bytes_read_per_hit"],
        "entry_pixel_bytes": info["pixel_bytes"] / max(info["entries"], 1),
        "fio_block_bytes": bs, "rounds": rounds,
        "median": {
            "ringfeed_epoch1_images_per_s": med(x["ringfeed"]["epoch1_images_per_s"] for x in rounds),
            "ringfeed_later_images_per_s": med(x["ringfeed"]["later_images_per_s"] for x in rounds),
            "ringfeed_cache_read_mb_per_s": med(x["ringfeed"]["cache_read_mb_per_s"] for x in rounds),
            "fio_iops": med(x["fio"]["iops"] for x in rounds),
            "fio_mb_per_s": med(x["fio"]["mb_per_s"] for x in rounds),
            "epoch1_to_fio": med(x["epoch1_to_fio"] for x in rounds),
            "later_to_fio": med(x["later_to_fio"] for x in rounds),
        },
        "goal": "images/s >= 0.9x fio's reads/s at the bytes a hit reads (a read per image)",
    }


if __name__ == "__main__":
    main()
