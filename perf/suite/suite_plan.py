#!/usr/bin/python3
"""perf/run's plan and its expected duration, before it starts.

  suite_plan.py [--quick] [--profiles hdd,sata-ssd,nvme] [--datasets imagenet,large]
                [--images N] [--hdd-images N] [--large-images N] [--rounds R]
                [--build fresh|incremental|none] [--root | --no-root] [--json]

Prints one line per phase (build, datasets, each profile's measurements,
report) with its expected seconds on this project's reference machine (2
cores, idle: the costs below were measured there with the quick suite), and
the total: perf/run prints it at its start. The measurements mirror
perf/suite/suite_measure.py's plan: the same cells, cold and warm, each costing its
images over the contender's rate plus a start-up (process start, imports,
the DataLoader's worker fork) plus the suite's own per-cell overhead (the
quiet wait, dropping or warming the cache).

`--quick` must stay within QUICK_BUDGET_S including a fresh Release build
(perf_suite_report_tests checks the default quick plan against it).
Standard library only.
"""
from __future__ import annotations

import argparse
import json
import sys

QUICK_BUDGET_S = 600  # --quick, fresh build included: under 10 minutes on 2 cores

# The settings perf/run uses (images, rounds, fio, quiet wait per measurement).
SETTINGS = {
    True: {"images": 1000, "hdd_images": 300, "large_images": 160, "rounds": 2, "fio_runtime": 3,
           "warm_epochs": 2, "quiet": 1.0, "decode_seconds": 2.0},
    False: {"images": 10000, "hdd_images": 2000, "large_images": 2000, "rounds": 3, "fio_runtime": 20,
            "warm_epochs": 5, "quiet": 20.0, "decode_seconds": 3.0},
}

# Seconds, 2 cores, idle machine.
BUILD_S = {"fresh": 200, "incremental": 15, "none": 0}  # ringfeed_cli + decode_limit + ringfeed_python, Release
FIXED_S = {"deps check": 4, "report": 4}
GEN_S_PER_IMAGE = {"imagenet": 0.0045, "large": 0.07}  # `ringfeed gen` on 2 threads
PACK_S_PER_IMAGE = 0.001
LOOP_SETUP_S = 12  # mkfs, losetup, copying the dataset, cgroup
THROTTLE_CHECK_S = 22  # 8 short fio runs on the loop device
PER_CELL_S = 0.6  # the suite's own work per measurement: cache drop or warm, block stats, bookkeeping
START_S = {"ringfeed": 0.3, "python": 1.6, "pytorch": 2.8, "pytorch_draft": 2.8, "fio": 0.6, "decode_limit": 0.5}
# Images/s per contender where the CPU bounds it (nvme, sata-ssd, any warm cache).
DECODE_RATE = {
    "imagenet": {"ringfeed": 1600, "python": 1600, "pytorch": 550},
    "large": {"ringfeed": 200, "python": 200, "pytorch": 75, "pytorch_draft": 135},
}
# Cold reads on the hdd profile (150 IOPS): small files, shards per sample, shards streamed.
HDD_COLD_RATE = {"small": 125, "shards": 155, "stream": 950, "pytorch": 58}
RAW_FILES_PER_S = {"nvme": 12000, "sata-ssd": 6000, "hdd": 140}


def cells(dataset: str, profile: str, loaders_only: bool, draft: bool, python: bool, decode_limit: bool,
          caches: list[str], no_warm_direct: bool) -> list[tuple]:
    """(tool, layout, pipeline, io, cache) as perf/suite/suite_measure.py runs them (one round)."""
    layouts = ["small"] if loaders_only else ["small", "shards"]
    plan = []
    if not loaders_only:
        plan += [("fio", lay, "none", "direct") for lay in layouts]
        for lay in layouts:
            plan += [("ringfeed", lay, "none", "buffered"), ("ringfeed", lay, "none", "direct")]
    for pipeline in ("val", "train"):
        for lay in layouts:
            plan.append(("ringfeed", lay, pipeline, "buffered"))
            if lay == "shards":
                plan.append(("ringfeed", lay, pipeline, "stream"))
            if lay == "small":
                plan += [("python", lay, pipeline, "buffered")] if python else []
                plan.append(("pytorch", lay, pipeline, "buffered"))
                plan += [("pytorch_draft", lay, pipeline, "buffered")] if draft else []
    if decode_limit:
        plan.append(("decode_limit", "small", "decode", "memory"))
    out = []
    for cache in caches:
        for tool, lay, pipeline, io in plan:
            if tool == "fio" and cache == "warm" and "cold" in caches:
                continue
            if tool == "decode_limit" and cache == "cold" and "warm" in caches:
                continue
            if no_warm_direct and cache == "warm" and io == "direct" and "cold" in caches:
                continue
            out.append((tool, lay, pipeline, io, cache))
    return out


def cache_states(quick: bool, root: bool, profile: str, dataset: str) -> list[str]:
    """Which page-cache states perf/run measures. Without root: warm only.
    --quick: the ImageNet-like set cold only on every profile (on 2 cores
    its loaders are decode-bound on nvme whatever the cache, and a warm
    cache reads from memory whatever the device); the large photos
    (decode-bound on nvme) warm only. The time this saves pays for the
    second round."""
    if not root:
        return ["warm"]
    if quick and dataset == "large":
        return ["warm"]
    if quick:
        return ["cold"]
    return ["cold", "warm"]


def default_profiles(quick: bool) -> list[str]:
    """perf/run's profiles without --profiles: --quick leaves out sata-ssd
    (on 2 cores decode-bound like nvme; its raw reads only check the
    throttle) to fit two rounds in its budget."""
    return ["hdd", "nvme"] if quick else ["hdd", "sata-ssd", "nvme"]


def cell_seconds(cell: tuple, dataset: str, profile: str, images: int, s: dict) -> float:
    tool, layout, pipeline, io, cache = cell
    start = START_S.get(tool, 0.5) + PER_CELL_S + s["quiet"] / 2
    if tool == "fio":
        return start + (s["fio_runtime"] if profile == "hdd" else min(s["fio_runtime"], 1.0))
    if tool == "decode_limit":
        return start + s["decode_seconds"] + images / 1500  # loading the files, then the timed decode
    if pipeline == "none":
        epochs = s["warm_epochs"] if cache == "warm" else 1
        rate = RAW_FILES_PER_S[profile] if (cache == "cold" or io == "direct") else 40000
        return start + images * epochs / rate
    rate = DECODE_RATE[dataset].get(tool, DECODE_RATE[dataset]["ringfeed"])
    if profile == "hdd" and cache == "cold":
        key = "pytorch" if tool.startswith("pytorch") else ("stream" if io == "stream" else layout)
        rate = min(rate, HDD_COLD_RATE[key])
    return start + images / rate


def plan(quick: bool, profiles: list[str], datasets: list[str], build: str = "fresh", root: bool = True,
         images: int | None = None, hdd_images: int | None = None, large_images: int | None = None,
         rounds: int | None = None, python: bool = True, decode_limit: bool = True) -> dict:
    """{"phases": [(name, seconds)], "total_s", "settings"}."""
    s = dict(SETTINGS[quick])
    for k, v in (("images", images), ("hdd_images", hdd_images), ("large_images", large_images),
                 ("rounds", rounds)):
        if v is not None:
            s[k] = v
    if not root:
        profiles = [p for p in profiles if p == "nvme"]
    phases = [("build", BUILD_S[build]), ("deps check", FIXED_S["deps check"] if root else 0)]
    if "imagenet" in datasets and profiles:
        phases.append(("dataset: imagenet", s["images"] * (GEN_S_PER_IMAGE["imagenet"] + PACK_S_PER_IMAGE)))
        if "hdd" in profiles and s["hdd_images"] < s["images"]:
            phases.append(("dataset: hdd subset", s["hdd_images"] * PACK_S_PER_IMAGE + 1))
    large = "large" in datasets and "nvme" in profiles
    if large:
        phases.append(("dataset: large", s["large_images"] * GEN_S_PER_IMAGE["large"]))
    for profile in profiles:
        todo = []
        if "imagenet" in datasets:
            n = s["hdd_images"] if profile == "hdd" else s["images"]
            todo.append(("imagenet", n, False, False))
        if profile == "nvme" and large:
            todo.append(("large", s["large_images"], True, True))
        for dataset, n, loaders_only, draft in todo:
            caches = cache_states(quick, root, profile, dataset)
            secs = sum(cell_seconds(c, dataset, profile, n, s) for c in
                       cells(dataset, profile, loaders_only, draft, python, decode_limit, caches, quick))
            secs = secs * s["rounds"] + (1 if not loaders_only else 0)  # the shard index, primed once
            if profile in ("sata-ssd", "hdd"):
                secs += LOOP_SETUP_S + THROTTLE_CHECK_S
            phases.append((f"profile {profile}: {dataset}", secs))
    phases.append(("report", FIXED_S["report"]))
    return {"phases": [(n, round(v)) for n, v in phases], "total_s": round(sum(v for _, v in phases)),
            "settings": s, "budget_s": QUICK_BUDGET_S if quick else None}


def describe(p: dict) -> str:
    t = p["total_s"]
    parts = ", ".join(f"{n} {v} s" for n, v in p["phases"] if v)
    return f"expected duration: about {t // 60} min {t % 60:02d} s on 2 idle cores ({parts})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--profiles", help="default: hdd,nvme with --quick, else hdd,sata-ssd,nvme")
    ap.add_argument("--datasets", default="imagenet,large")
    ap.add_argument("--build", choices=list(BUILD_S), default="fresh")
    ap.add_argument("--root", dest="root", action="store_true", default=True)
    ap.add_argument("--no-root", dest="root", action="store_false")
    for k in ("images", "hdd-images", "large-images", "rounds"):
        ap.add_argument(f"--{k}", type=int)
    ap.add_argument("--json", action="store_true", help="print the plan as JSON")
    a = ap.parse_args()
    profiles = [x for x in a.profiles.split(",") if x] if a.profiles else default_profiles(a.quick)
    p = plan(a.quick, profiles, [x for x in a.datasets.split(",") if x], a.build,
             a.root, a.images, a.hdd_images, a.large_images, a.rounds)
    print(json.dumps(p) if a.json else describe(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
