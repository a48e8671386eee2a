#!/usr/bin/python3
"""Writes perf/run's report: report.json (every raw number), report.md and
PNG plots (gnuplot).

  suite_report.py --raw WORK/raw --run WORK/run.json --out DIR   (perf/run does this)
  suite_report.py --from DIR/report.json [--out DIR]             (re-render md + PNGs)

report.md: a headline table (the ImageNet-like dataset), then per dataset
(imagenet; large: 1-4 MP photos) and profile the ratios of ringfeed's train
and val images/s to the bare-decode limit (perf/decode_limit: TurboJPEG's
full decode of the same JPEGs in memory on as many threads) and to the
DataLoader (with and without Pillow's draft()), and of the Python
ringfeed.Loader to `ringfeed bench`; then per profile every measurement cold
and warm with images/s, MB/s, the ratio to fio (MB/s over fio's MB/s on the
same files: how close to the device limit) and to PyTorch (images/s over the
DataLoader's on the same pipeline and cache state), and the bottleneck
ringfeed names; then the environment. report.json holds every raw number
and the ratio table ("ratios"). Standard library + gnuplot.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

from measure_rounds import SPREAD_LIMIT, rounds_spread

PROFILE_ORDER = ["nvme", "sata-ssd", "hdd", "path"]
DATASET_ORDER = ["imagenet", "large"]
DATASET_NAMES = {"imagenet": "ImageNet-like", "large": "large photos (1-4 MP)", "path": "--path dataset"}
ROWS = [  # (label, tool, layout, pipeline, io)
    ("fio, 16 KiB O_DIRECT reads", "fio", "small", "none", "direct"),
    ("fio, 16 KiB O_DIRECT reads", "fio", "shards", "none", "direct"),
    ("ringfeed raw read, buffered", "ringfeed", "small", "none", "buffered"),
    ("ringfeed raw read, --direct", "ringfeed", "small", "none", "direct"),
    ("ringfeed raw read, buffered", "ringfeed", "shards", "none", "buffered"),
    ("ringfeed raw read, --direct", "ringfeed", "shards", "none", "direct"),
    ("bare decode (TurboJPEG, in memory)", "decode_limit", "small", "decode", "memory"),
    ("ringfeed val", "ringfeed", "small", "val", "buffered"),
    ("ringfeed.Loader (Python) val", "python", "small", "val", "buffered"),
    ("PyTorch DataLoader val", "pytorch", "small", "val", "buffered"),
    ("DataLoader, Pillow draft() val", "pytorch_draft", "small", "val", "buffered"),
    ("ringfeed val", "ringfeed", "shards", "val", "buffered"),
    ("ringfeed val, --stream", "ringfeed", "shards", "val", "stream"),
    ("ringfeed train", "ringfeed", "small", "train", "buffered"),
    ("ringfeed.Loader (Python) train", "python", "small", "train", "buffered"),
    ("PyTorch DataLoader train", "pytorch", "small", "train", "buffered"),
    ("DataLoader, Pillow draft() train", "pytorch_draft", "small", "train", "buffered"),
    ("ringfeed train", "ringfeed", "shards", "train", "buffered"),
    ("ringfeed train, --stream", "ringfeed", "shards", "train", "stream"),
]


def sh(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def environment() -> dict:
    cpu = next((l.split(":", 1)[1].strip() for l in sh(["lscpu"]).splitlines() if l.startswith("Model name")), "?")
    mem = next((l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")), "0")
    osname = next((l.split("=", 1)[1].strip().strip('"') for l in open("/etc/os-release")
                   if l.startswith("PRETTY_NAME=")), "?") if os.path.exists("/etc/os-release") else "?"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    commit = sh(["git", "-C", root, "rev-parse", "--short", "HEAD"]) or "unknown"
    if sh(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"]):
        commit += " (dirty)"
    damon = []  # proactive reclaim that pages out idle page cache (as on some VMs)
    for k in sorted(glob.glob("/sys/kernel/mm/damon/admin/kdamonds/[0-9]*")):
        try:
            if open(os.path.join(k, "state")).read().strip() != "on":
                continue
            for sch in sorted(glob.glob(os.path.join(k, "contexts/*/schemes/[0-9]*"))):
                action = open(os.path.join(sch, "action")).read().strip()
                damon.append(action)
        except OSError:
            continue
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host": platform.node(), "cpu": cpu,
            "damon_schemes": damon,
            "cores": os.cpu_count(), "memory_gib": round(int(mem) / 2**20, 1), "kernel": platform.release(),
            "os": osname, "commit": commit, "fio": sh(["fio", "--version"]), "python": sys.version.split()[0],
            "load_after": open("/proc/loadavg").read().split()[:3]}


def build_report(raw_dir: str, run_json: str) -> dict:
    with open(run_json) as f:
        run = json.load(f)
    profiles = []
    for p in sorted(glob.glob(os.path.join(raw_dir, "*.json"))):
        with open(p) as f:
            profiles.append(json.load(f))
    profiles.sort(key=profile_key)
    rep = {"format": 1, "run": run, "environment": environment(), "profiles": profiles}
    rep["ratios"] = ratio_rows(rep)
    rep["disagreeing"] = disagreeing_cells(rep)
    return rep


# --- lookups ---------------------------------------------------------------------------


def dataset(profile: dict) -> str:
    return profile.get("dataset", "imagenet")  # reports from before there were datasets


def profile_key(p: dict) -> tuple:
    d = dataset(p)
    return (DATASET_ORDER.index(d) if d in DATASET_ORDER else 99,
            PROFILE_ORDER.index(p["profile"]) if p["profile"] in PROFILE_ORDER else 99)


def of_dataset(rep: dict, name: str) -> list[dict]:
    return [p for p in rep["profiles"] if dataset(p) == name]


def find(profile: dict, tool: str, layout: str, pipeline: str, io: str, cache: str) -> dict | None:
    if tool == "fio":
        cache = "direct"
    elif tool == "decode_limit":
        cache = "memory"  # decodes files held in memory: cache-independent
    for m in profile["measurements"]:
        if (m["tool"], m["layout"], m["pipeline"], m["io"], m["cache"]) == (tool, layout, pipeline, io, cache):
            return m
    return None


def ok(m: dict | None) -> bool:
    return bool(m) and m.get("status") == "ok"


def num(v: float | None, digits: int = 0) -> str:
    if v is None:
        return "—"
    if digits == 0 and abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.{max(digits, 1 if abs(v) < 100 else 0)}f}"


def spread_of(m: dict | None) -> float | None:
    """How far the cell's rounds are apart ((max - min) / median of its
    images/s, else MB/s); computed from the runs for reports written before
    suite_measure recorded it."""
    if not ok(m):
        return None
    if isinstance(m.get("spread"), (int, float)):
        return m["spread"]
    rate = "images_per_s" if m.get("images_per_s") is not None else "mb_per_s"
    return rounds_spread([r[rate] for r in m.get("runs", [])
                          if r.get("status") == "ok" and isinstance(r.get(rate), (int, float))])


def disagrees(m: dict | None) -> bool:
    s = spread_of(m)
    return s is not None and s > SPREAD_LIMIT


def rate_cell(m: dict | None, key: str, notes: list[str]) -> str:
    if m is None:
        return ""
    if not ok(m):
        reason = (m.get("reason") or m.get("status") or "?").replace("|", "\\|")
        if reason not in notes:
            notes.append(reason)
        return f"{'n/a' if m.get('status') == 'n/a' else 'failed'} [{notes.index(reason) + 1}]"
    v = m.get(key)
    if v is None:
        return "—"
    cell = num(v)
    lo, hi = m.get(key + "_min"), m.get(key + "_max")
    if m.get("rounds_ok", 1) > 1 and lo is not None and hi is not None:
        cell += f" ({num(lo)}–{num(hi)})"
    if disagrees(m) and key == ("images_per_s" if m.get("images_per_s") is not None else "mb_per_s"):
        cell += f" ⚠ {spread_of(m):.0%}"
    return cell


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}×" if a and b else "—"


def disagreeing_cells(rep: dict) -> list[dict]:
    """Every measured cell whose rounds are further apart than SPREAD_LIMIT:
    dataset, profile, the row's label, layout, cache state, the spread and
    each round's rate (in the order the rounds ran)."""
    out = []
    for p in sorted(rep["profiles"], key=profile_key):
        for label, tool, layout, pipeline, io in ROWS:
            for cache in ("cold", "warm"):
                m = find(p, tool, layout, pipeline, io, cache)
                if m is None or (tool in ("fio", "decode_limit") and cache == "warm") or not disagrees(m):
                    continue
                rate = "images_per_s" if m.get("images_per_s") is not None else "mb_per_s"
                out.append({"dataset": dataset(p), "profile": p["profile"], "label": label, "layout": layout,
                            "cache": m["cache"], "spread": spread_of(m), "unit": rate,
                            "rounds": [r.get(rate) for r in m.get("runs", []) if r.get("status") == "ok"]})
    return out


def rounds_section(rep: dict) -> list[str]:
    """The cells whose rounds disagree by more than SPREAD_LIMIT, or that none do."""
    rounds = rep["run"].get("rounds", 1)
    if rounds < 2:
        return [f"One round per measurement: the rounds were not compared (a cell's spread is flagged from "
                f"2 rounds on, above {SPREAD_LIMIT:.0%}).\n"]
    bad = rep.get("disagreeing")
    if bad is None:
        bad = disagreeing_cells(rep)
    if not bad:
        return [f"Every cell's {rounds} rounds agree within {SPREAD_LIMIT:.0%} ((max − min) / median).\n"]
    L = [f"## ⚠ Rounds that disagree by more than {SPREAD_LIMIT:.0%}\n",
         "(max − min) / median of the cell's rate over its rounds, each round's rate in the order they ran: "
         "their median is not a number to trust (something else ran, or the order of runs matters); "
         "these cells carry ⚠ below.\n",
         "| dataset | profile | measurement | files | cache | spread | rounds |", "|---|---|---|---|---|---:|---|"]
    for c in bad:
        unit = "images/s" if c["unit"] == "images_per_s" else "MB/s"
        L.append(f"| {DATASET_NAMES.get(c['dataset'], c['dataset'])} | {c['profile']} | {c['label']} | {c['layout']} "
                 f"| {c['cache']} | {c['spread']:.0%} | {' / '.join(num(v) for v in c['rounds'])} {unit} |")
    L.append("")
    return L


# --- ratios to the bare-decode limit and the DataLoader -------------------------------------

RATIO_CONTENDERS = {  # key: (tool, pipeline)
    "decode_limit": ("decode_limit", "decode"),
    "ringfeed_train": ("ringfeed", "train"), "ringfeed_val": ("ringfeed", "val"),
    "python_train": ("python", "train"), "python_val": ("python", "val"),
    "dataloader_train": ("pytorch", "train"), "dataloader_val": ("pytorch", "val"),
    "dataloader_draft_train": ("pytorch_draft", "train"), "dataloader_draft_val": ("pytorch_draft", "val"),
}
RATIOS = {  # name: (numerator, denominator)
    "ringfeed_train_vs_decode_limit": ("ringfeed_train", "decode_limit"),
    "ringfeed_val_vs_decode_limit": ("ringfeed_val", "decode_limit"),
    "ringfeed_train_vs_dataloader": ("ringfeed_train", "dataloader_train"),
    "ringfeed_val_vs_dataloader": ("ringfeed_val", "dataloader_val"),
    "ringfeed_train_vs_dataloader_draft": ("ringfeed_train", "dataloader_draft_train"),
    "ringfeed_val_vs_dataloader_draft": ("ringfeed_val", "dataloader_draft_val"),
    "python_train_vs_ringfeed_bench": ("python_train", "ringfeed_train"),
    "python_val_vs_ringfeed_bench": ("python_val", "ringfeed_val"),
    "python_train_vs_dataloader": ("python_train", "dataloader_train"),
    "python_val_vs_dataloader": ("python_val", "dataloader_val"),
}


def ratio_rows(rep: dict) -> list[dict]:
    """Per dataset, profile and cache state: the loaders' images/s on the
    small files and their ratios (None where a side was not measured). The
    bare-decode limit is cache-independent: the same number for cold and warm."""
    rows = []
    for p in sorted(rep["profiles"], key=profile_key):
        for cache in [c for c in ("cold", "warm") if any(m["cache"] == c for m in p["measurements"])]:
            row = {"dataset": dataset(p), "profile": p["profile"], "cache": cache}
            for key, (tool, pipeline) in RATIO_CONTENDERS.items():
                m = find(p, tool, "small", pipeline, "memory" if tool == "decode_limit" else "buffered", cache)
                row[key] = m.get("images_per_s") if ok(m) else None
                if disagrees(m):
                    row.setdefault("rounds_disagree", []).append(key)
            lim = find(p, "decode_limit", "small", "decode", "memory", cache)
            row["decode_limit_megapixels_per_image"] = lim.get("megapixels_per_image") if ok(lim) else None
            for name, (a, b) in RATIOS.items():
                row[name] = row[a] / row[b] if row[a] and row[b] else None
            rows.append(row)
    return rows


def ratio_section(rep: dict) -> list[str]:
    rows = rep.get("ratios") or ratio_rows(rep)
    if not rows:
        return []
    L = ["## Against the bare-decode limit and the DataLoader\n"]
    L.append("Images/s on the small files (ImageFolder), batch 64, float32 NCHW, as many threads / workers as "
             "cores. **bare decode**: `perf/decode_limit`, TurboJPEG's full decode of the same JPEGs held in memory "
             "on as many threads (the limit of any loader that decodes whole images; cache-independent). "
             "All rates are steady state (after the warm-up batches, start-up apart: see \"How to read this\"). "
             "× cells: ringfeed's images/s over that contender's. Goals (issue 17): train ≥ 1.1× the bare decode "
             "(ImageNet-like); fast mode ≥ 5× the DataLoader on large photos; Python loader ≥ 0.95× `ringfeed "
             "bench`.\n")
    L.append("| dataset | profile | cache | bare decode img/s (MP/image) | ringfeed train img/s (× bare) "
             "| ringfeed val img/s (× bare) | DataLoader train / val img/s | ringfeed × DataLoader train / val "
             "| DataLoader + draft() train / val img/s | ringfeed × draft train / val "
             "| ringfeed.Loader train / val img/s (× bench) |")
    L.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    x = lambda v: f"{v:.2f}×" if v is not None else "—"  # noqa: E731
    for r in rows:
        # A contender's images/s, ⚠ where its rounds disagree (see "Rounds that disagree").
        n = lambda k: (num(r[k]) if r[k] is not None else "—") + (  # noqa: E731
            " ⚠" if k in r.get("rounds_disagree", []) else "")
        mp = r.get("decode_limit_megapixels_per_image")
        L.append(f"| {DATASET_NAMES.get(r['dataset'], r['dataset'])} | {r['profile']} | {r['cache']} "
                 f"| {n('decode_limit')}{f' ({mp:.2f} MP)' if mp else ''} "
                 f"| {n('ringfeed_train')} ({x(r['ringfeed_train_vs_decode_limit'])}) "
                 f"| {n('ringfeed_val')} ({x(r['ringfeed_val_vs_decode_limit'])}) "
                 f"| {n('dataloader_train')} / {n('dataloader_val')} "
                 f"| {x(r['ringfeed_train_vs_dataloader'])} / {x(r['ringfeed_val_vs_dataloader'])} "
                 f"| {n('dataloader_draft_train')} / {n('dataloader_draft_val')} "
                 f"| {x(r['ringfeed_train_vs_dataloader_draft'])} / {x(r['ringfeed_val_vs_dataloader_draft'])} "
                 f"| {n('python_train')} / {n('python_val')} ({x(r['python_train_vs_ringfeed_bench'])} / "
                 f"{x(r['python_val_vs_ringfeed_bench'])}) |")
    missing = sorted({f"{dataset(p)} {p['profile']}" for p in rep["profiles"]
                      if find(p, "decode_limit", "small", "decode", "memory", "memory") is None})
    if missing:
        L.append(f"\nNo bare-decode measurement for {', '.join(missing)} (no `decode_limit` built, or no small "
                 "files): those × bare cells are —.")
    L += startup_section(rep)
    L.append("")
    return L


STARTUP_ROWS = [("ringfeed train", "ringfeed", "train"), ("ringfeed val", "ringfeed", "val"),
                ("ringfeed.Loader train", "python", "train"), ("DataLoader train", "pytorch", "train"),
                ("DataLoader val", "pytorch", "val")]


def startup_section(rep: dict) -> list[str]:
    """Per dataset, profile and cache state: each loader's start-up and its
    whole short run's rate against its steady state (small files)."""
    rows = []
    for p in sorted(rep["profiles"], key=profile_key):
        for cache in [c for c in ("cold", "warm") if any(m["cache"] == c for m in p["measurements"])]:
            cells = []
            for _, tool, pipeline in STARTUP_ROWS:
                m = find(p, tool, "small", pipeline, "buffered", cache)
                if not ok(m) or not isinstance(m.get("startup_s"), (int, float)):
                    cells.append("—")
                    continue
                run = m.get("run_images_per_s")
                cells.append(f"{m['startup_s']:.2f} s; {num(run)} → {num(m.get('images_per_s'))}"
                             if run else f"{m['startup_s']:.2f} s")
            if any(c != "—" for c in cells):
                rows.append(f"| {DATASET_NAMES.get(dataset(p), dataset(p))} | {p['profile']} | {cache} | "
                            + " | ".join(cells) + " |")
    if not rows:
        return []
    L = ["\n### Start-up (paid once per run, not in the images/s above)\n",
         "Start-up s; then the whole short run's images/s (start-up included) → the steady state's.\n",
         "| dataset | profile | cache | " + " | ".join(r[0] for r in STARTUP_ROWS) + " |",
         "|---|---|---|" + "---:|" * len(STARTUP_ROWS)]
    return L + rows


# --- markdown --------------------------------------------------------------------------


def markdown(rep: dict) -> str:
    run, env = rep["run"], rep["environment"]
    L: list[str] = []
    notes: list[str] = []
    L.append("# ringfeed perf suite (`perf/run`)\n")
    L.append(f"`{run['command']}` — {env['date']}, commit {env['commit']}, "
             f"{'quick' if run['quick'] else 'full'} run, {run['rounds']} round(s) per measurement "
             f"(median{' [min–max]' if run['rounds'] > 1 else ''}), suite time {run['suite_seconds']} s.\n")
    for n in run.get("notes", []):
        L.append(f"- **{n}**")
    if "FAILED" in run.get("build", ""):
        L.append(f"- **{run['build']}**")
    L.append("")
    L += rounds_section(rep)

    # Headline (the ImageNet-like or --path dataset: the only one with raw reads and shards)
    imagenet = [p for p in rep["profiles"] if dataset(p) != "large"]
    any_cold = any(m["cache"] == "cold" for p in imagenet for m in p["measurements"])
    if imagenet:
        L.append(f"## Headline ({'cold' if any_cold else 'warm'} page cache, "
                 f"{'the --path' if run.get('path') else 'ImageNet-like'} dataset)\n")
    L.append("| profile | device limit: fio MB/s | ringfeed raw --direct MB/s (× fio) | ringfeed raw buffered MB/s "
             "(× fio) | ringfeed train img/s | PyTorch train img/s | ringfeed ÷ PyTorch | ringfeed train on "
             "shards img/s | ringfeed says (train) |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    if not imagenet:
        del L[-2:]
    for p in imagenet:
        fio = find(p, "fio", "small", "none", "direct", "cold")
        fio_mb = fio.get("mb_per_s") if ok(fio) else None
        d = find(p, "ringfeed", "small", "none", "direct", "cold")
        b = find(p, "ringfeed", "small", "none", "buffered", "cold")
        t = find(p, "ringfeed", "small", "train", "buffered", "cold")
        pt = find(p, "pytorch", "small", "train", "buffered", "cold")
        ts = find(p, "ringfeed", "shards", "train", "buffered", "cold")
        cache_word = "cold" if any(m["cache"] == "cold" for m in p["measurements"]) else "warm"
        if cache_word == "warm":  # not root: warm only
            d = find(p, "ringfeed", "small", "none", "direct", "warm")
            b = find(p, "ringfeed", "small", "none", "buffered", "warm")
            t = find(p, "ringfeed", "small", "train", "buffered", "warm")
            pt = find(p, "pytorch", "small", "train", "buffered", "warm")
            ts = find(p, "ringfeed", "shards", "train", "buffered", "warm")
        g = lambda m, k: m.get(k) if ok(m) else None  # noqa: E731
        L.append(f"| {p['profile']}{'' if cache_word == 'cold' else ' (warm)'} | {rate_cell(fio, 'mb_per_s', notes)} "
                 f"| {rate_cell(d, 'mb_per_s', notes)} ({ratio(g(d, 'mb_per_s'), fio_mb)}) "
                 f"| {rate_cell(b, 'mb_per_s', notes)} ({ratio(g(b, 'mb_per_s'), fio_mb)}) "
                 f"| {rate_cell(t, 'images_per_s', notes)} | {rate_cell(pt, 'images_per_s', notes)} "
                 f"| {ratio(g(t, 'images_per_s'), g(pt, 'images_per_s'))} | {rate_cell(ts, 'images_per_s', notes)} "
                 f"| {g(t, 'bottleneck') or '—'} |")
    L.append("")
    if imagenet:
        L.append("![images per second](images_per_s.png)\n")
        L.append("![MB/s against fio](mb_per_s_vs_fio.png)\n")
    L += ratio_section(rep)

    # Per dataset and profile
    for p in rep["profiles"]:
        d = dataset(p)
        L.append(f"## Profile `{p['profile']}`{', ' + DATASET_NAMES['large'] if d == 'large' else ''}\n")
        L.append(f"- throttle: {p['limits']}")
        L.append(f"- filesystem: {p.get('filesystem', '?')}")
        for k, lay in p["layouts"].items():
            what = "small files (ImageFolder)" if k == "small" else "tar shards (WebDataset)"
            L.append(f"- {what}: {lay['files']:,} files, {lay['bytes'] / 1e6:,.1f} MB")
        tc = p.get("throttle_check")
        if tc:
            g = lambda k, f: tc.get(k, {}).get(f)  # noqa: E731
            L.append(f"- throttle check on {tc['device']} (fio inside the cgroup; unthrottled in brackets): "
                     f"1 MiB O_DIRECT sequential reads {num(g('seq_1m_libaio', 'mb_per_s'))} MB/s with libaio "
                     f"({num(g('seq_1m_libaio_unthrottled', 'mb_per_s'))}), "
                     f"{num(g('seq_1m_uring', 'mb_per_s'))} MB/s with io_uring "
                     f"({num(g('seq_1m_uring_unthrottled', 'mb_per_s'))}); 16 KiB random reads at depth 32 "
                     f"{num(g('rand_16k', 'iops'))} IOPS ({num(g('rand_16k_unthrottled', 'iops'))}); "
                     f"buffered cold sequential read of a shard {num(g('buffered', 'mb_per_s'))} MB/s "
                     f"({num(g('buffered_unthrottled', 'mb_per_s'))})")
            lib, uring = g("seq_1m_libaio", "mb_per_s"), g("seq_1m_uring", "mb_per_s")
            if lib and uring and uring < 0.75 * lib:
                L.append(f"- **throttle artefact**: inside the cgroup, 1 MiB O_DIRECT reads through io_uring got "
                         f"{uring / lib:.0%} of libaio's rate: this kernel's blk-throttle charges such io_uring "
                         "requests more than once (most likely the nonblocking attempt, refused with EAGAIN "
                         "because the request must be split, is counted before io_uring re-issues it from a "
                         "worker). The suite's fio requests "
                         "(16 KiB) and ringfeed's small-file reads are far below the split size; io_uring reads "
                         "above 512 KiB (large shard reads, if ringfeed issues them) pay double here.")
        if not p.get("direct_flag", True):
            L.append("- `ringfeed bench --direct`: **flag missing in this build** (rows n/a)")
        L.append("")
        L.append("| measurement | files | cold img/s | cold MB/s | cold × fio | cold × PyTorch | warm img/s "
                 "| warm MB/s | warm × PyTorch | start-up s (cold / warm) | ringfeed says (cold / warm) |")
        L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        fio_mb = {lay: (find(p, "fio", lay, "none", "direct", "cold") or {}).get("mb_per_s") for lay in p["layouts"]}
        for label, tool, layout, pipeline, io in ROWS:
            if layout not in p["layouts"]:
                continue
            cold = find(p, tool, layout, pipeline, io, "cold")
            warm = None if tool in ("fio", "decode_limit") else find(p, tool, layout, pipeline, io, "warm")
            if cold is None and warm is None:
                continue
            cells = {}
            for cache, m in (("cold", cold), ("warm", warm)):
                ips = rate_cell(m, "images_per_s", notes) if tool != "fio" else ""
                mbs = rate_cell(m, "mb_per_s", notes)
                reread = (m or {}).get("device_read_mb")
                # Only on a profile's own loop device: on a shared disk the count includes other
                # processes' reads (and the DataLoader's library loads).
                if (cache == "warm" and io == "buffered" and ok(m) and reread is not None and p.get("device")
                        and reread * 1e6 > 0.1 * p["layouts"][layout]["bytes"]):
                    text = ("a warm run that still read ≥ 10% of the data from the device: part of the page cache "
                            "had been evicted (see the environment: proactive reclaim); the number is not a "
                            "warm-cache one")
                    if text not in notes:
                        notes.append(text)
                    ips = f"{ips} ‡{notes.index(text) + 1} ({reread:,.0f} MB read)" if ips else ips
                ref = find(p, "pytorch", "small", pipeline, "buffered", cache) if pipeline != "none" else None
                x_pt = (ratio(m.get("images_per_s"), ref.get("images_per_s"))
                        if tool in ("ringfeed", "python", "pytorch_draft") and ok(m) and ok(ref) else "")
                cells[cache] = (ips, mbs, x_pt)
            x_fio = (ratio(cold.get("mb_per_s"), fio_mb.get(layout))
                     if ok(cold) and tool not in ("fio", "decode_limit") else "")
            says = (" / ".join(m.get("bottleneck") or "—" for m in (cold, warm) if ok(m))
                    if tool in ("ringfeed", "python") else "")
            if tool == "fio" and ok(cold):
                says = f"{num(cold.get('iops'))} IOPS (O_DIRECT: cache-independent)"
            if tool == "decode_limit" and ok(cold):
                says = (f"{cold.get('threads')} threads, {cold.get('megapixels_per_image', 0):.2f} MP/image "
                        f"(in memory: cache-independent)")
            c, w = cells["cold"], cells["warm"]
            up = " / ".join(f"{m['startup_s']:.2f}" if ok(m) and isinstance(m.get("startup_s"), (int, float)) else "—"
                            for m in (cold, warm)) if pipeline not in ("none",) else ""
            L.append(f"| {label} | {layout} | {c[0]} | {c[1]} | {x_fio} | {c[2]} | {w[0]} | {w[1]} | {w[2]} | {up} "
                     f"| {says} |")
        busy = [f"{m['tool']} {m['pipeline']} {m['layout']} {m['cache']} ({m['other_load_cores_max']:.2f} cores)"
                for m in p["measurements"] if (m.get("other_load_cores_max") or 0) > 0.3]
        if busy:
            L.append(f"\n**Other processes were busy during**: {', '.join(busy)}: those numbers are less trustworthy.")
        L.append("")

    L.append("## How to read this\n")
    L.append("- **images/s** of every loader (ringfeed bench, ringfeed.Loader, the DataLoader) is its **steady "
             "state**: the images delivered after the same warm-up batches for each contender (8, the number of "
             "ringfeed's batch buffers at batch 64, whose pages are touched for the first time as they fill; at "
             "most half a run's batches, at least the first) over the time after them. What a training run pays "
             "once is apart: **start-up** (opening the loader, or ImageFolder's scan and the DataLoader's worker "
             "start, then the first batch; for the bare decode, loading the files into memory). The whole short "
             "run's rate, start-up included, is `run_images_per_s` in report.json (section \"Start-up\").")
    L.append("- **cold**: `sync; echo 3 > /proc/sys/vm/drop_caches` before each run; **warm**: every file read "
             "beforehand (outside the throttle). `--direct` runs bypass the page cache, so their warm numbers "
             "are cold ones too. Raw warm reads run several epochs.")
    L.append("- Before its first measurement each profile opens the shards once, untimed: ringfeed caches a "
             "shard's member index after the first open (which walks every tar header and so pulls the shards "
             "into the page cache before bench's clock starts); measured runs all see the cached index, as every "
             "later run of a training job does.")
    L.append("- **fio** (`--rw=read --bs=16k --direct=1 --ioengine=io_uring --iodepth=32 --file_service_type=random`) "
             "is the device limit for 16 KiB requests on the same files. It skips each file's last partial block; "
             "ringfeed reads whole files, in larger requests, so where a device is limited by IOPS rather than "
             "bandwidth ringfeed can exceed fio's MB/s (× fio > 1).")
    L.append("- **× PyTorch**: ringfeed's images/s over `torch.utils.data.DataLoader(ImageFolder, batch_size=64, "
             "num_workers=cores)` with the same transforms, same cache state, on the small files (the DataLoader "
             "cannot read the shards); both deliver float32 normalized NCHW batches on the host.")
    L.append("- **ringfeed says**: the `bottleneck` field of `ringfeed bench --json` (storage, decode, upload, "
             "consumer); for ringfeed.Loader, its `stats()['bottleneck']`.")
    L.append("- **ringfeed.Loader (Python)**: the build's Python module, `ringfeed.Loader(DIR, batch_size=64, "
             "pipeline=P, output='float32', threads=cores)` on the host, one epoch in a process of its own "
             "(perf/compare/compare_loader.py's Python contender), each batch touched as the DataLoader's are.")
    L.append("- **bare decode**: `perf/decode_limit DIR --threads cores` (TurboJPEG `tjDecompress2` full decodes "
             "to RGB of up to 2000 of the JPEGs, loaded into memory first, untimed). A loader that decodes whole "
             "images cannot beat it; ringfeed's train pipeline decodes only what its crop needs.")
    L.append("- **DataLoader + draft()**: the same DataLoader whose ImageFolder loader calls Pillow's "
             "`Image.draft('RGB', (s, s))` before `convert('RGB')` (libjpeg's DCT scaling by 1/2 to 1/8 while "
             "both sides stay ≥ s; s = 224 train, 256 val): measured on the large photos, where it applies.")
    L.append("- **large photos**: `ringfeed gen --photos large` (1-4 megapixels, mean 2.5; phone / DSLR / "
             "OpenImages-class), small files on the nvme profile, loaders only (no raw reads, no shards).")
    L.append("- hdd and sata-ssd are emulated: an ext4 image on a loop device with O_DIRECT backing "
             "(`losetup --direct-io=on`: no second page cache under the loop device), reads throttled by a "
             "cgroup-v1 blkio group (`blkio.throttle.read_bps_device` and `read_iops_device`) that every measured "
             "process joins before it starts (buffered reads are throttled too: the reading task issues them; "
             "see each profile's throttle check). blk-throttle counts requests, not seeks: a sequential request "
             "costs an hdd profile as much as a random one, so small files are penalised only by their request "
             "count and large sequential reads only by request size × 150.")
    L.append("- A single cold run of a small dataset is short; the throttle lets a burst through at its start, so "
             "a few hundred MB read in well under a second can come out above the nominal limit.\n")

    L.append("## Environment\n")
    L.append(f"- CPU: {env['cpu']}, {env['cores']} cores; memory {env['memory_gib']} GiB")
    L.append(f"- kernel {env['kernel']}, {env['os']}; {env['fio']}; Python {env['python']}")
    torch = next((m.get("torch") for p in rep["profiles"] for m in p["measurements"] if m.get("torch")), None)
    L.append(f"- PyTorch: {torch or 'not measured'}")
    L.append(f"- ringfeed: {run['binary']} — {run['build']}; commit {env['commit']}")
    L.append(f"- ringfeed Python module: {run.get('python_path') or 'not built'}; bare-decode limit: "
             f"{run.get('decode_limit') or 'not built'}")
    if imagenet or run.get("path"):
        ds = "`ringfeed gen` (ImageNet-like JPEGs)" if not run.get("path") else f"`{run['path']}`"
        L.append(f"- dataset: {ds}, {run['images']:,} images in {run['classes']} classes"
                 + (f" (hdd profile: a {run['hdd_images']:,}-image subset)" if run['hdd_images'] < run['images']
                    else "") + f"; shards packed by {run.get('pack') or '?'}")
    if of_dataset(rep, "large"):
        L.append(f"- large photos: `ringfeed gen --photos large`, {run.get('large_images', 0):,} images in "
                 f"{run['classes']} classes (1-4 MP, mean 2.5 MP; small files only, on the nvme profile)")
    for p in rep["profiles"]:
        for k, lay in p["layouts"].items():
            L.append(f"  - {dataset(p)} {p['profile']} {k}: {lay['files']:,} files, {lay['bytes'] / 1e6:,.1f} MB "
                     f"({lay['bytes'] / max(lay['files'], 1) / 1e3:.0f} KB per file) on {p.get('filesystem', '?')}")
    if env.get("damon_schemes"):
        L.append(f"- **DAMON proactive reclaim is on** (schemes: {', '.join(env['damon_schemes'])}): the kernel pages "
                 "out page cache it judges idle, within seconds on this VM, so a warm run can find part of its "
                 "files evicted. Each run's device reads are in report.json (`device_read_mb`: on nvme the whole "
                 "disk's, other processes included); on the loop devices, warm cells marked ‡ read ≥ 10% of their "
                 "data from the device.")
    L.append(f"- load average after the run: {' '.join(env['load_after'])}")
    if notes:
        L.append("\n## Notes\n")
        for i, n in enumerate(notes, 1):
            L.append(f"{i}. {n}")
    return "\n".join(L) + "\n"


# --- plots -----------------------------------------------------------------------------


# One colour per series, fixed, far apart (no two series share one, in any
# panel): ringfeed's in blues and greens, the references in warm colours.
IMG_SERIES = [  # (title, tool, layout, pipeline, io, colour, DataLoader pipeline the × label is against)
    ("ringfeed val", "ringfeed", "small", "val", "buffered", "#1f77b4", "val"),
    ("ringfeed train", "ringfeed", "small", "train", "buffered", "#17becf", "train"),
    ("ringfeed.Loader (Python) train", "python", "small", "train", "buffered", "#2ca02c", "train"),
    ("ringfeed train, shards", "ringfeed", "shards", "train", "buffered", "#9467bd", "train"),
    ("ringfeed train, shards --stream", "ringfeed", "shards", "train", "stream", "#bcbd22", "train"),
    ("bare decode (TurboJPEG, in memory)", "decode_limit", "small", "decode", "memory", "#7f7f7f", None),
    ("PyTorch DataLoader val", "pytorch", "small", "val", "buffered", "#ff7f0e", None),
    ("PyTorch DataLoader train", "pytorch", "small", "train", "buffered", "#d62728", None),
    ("DataLoader + Pillow draft() train", "pytorch_draft", "small", "train", "buffered", "#8c564b", None),
]
MB_SERIES = [
    ("fio 16k direct", "fio", "small", "none", "direct", "#7f7f7f"),
    ("ringfeed buffered", "ringfeed", "small", "none", "buffered", "#1f77b4"),
    ("ringfeed --direct", "ringfeed", "small", "none", "direct", "#17becf"),
    ("fio 16k direct, shards", "fio", "shards", "none", "direct", "#d62728"),
    ("ringfeed buffered, shards", "ringfeed", "shards", "none", "buffered", "#9467bd"),
    ("ringfeed --direct, shards", "ringfeed", "shards", "none", "direct", "#2ca02c"),
]


def panels(rep: dict) -> list[tuple[str, str, list[dict]]]:
    """(dataset, cache, profiles) for each panel of images_per_s.png: per
    dataset, each cache state measured, with the profiles that measured it."""
    out = []
    for d in DATASET_ORDER + sorted({dataset(p) for p in rep["profiles"]} - set(DATASET_ORDER)):
        profs = [p for p in sorted(rep["profiles"], key=profile_key) if dataset(p) == d]
        for cache in ("cold", "warm"):
            with_cache = [p for p in profs if any(m["cache"] == cache for m in p["measurements"])]
            if with_cache:
                out.append((d, cache, with_cache))
    return out


def gp_quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def plot_scripts(rep: dict, out: str) -> dict[str, str]:
    """The gnuplot scripts of images_per_s.png and mb_per_s_vs_fio.png.

    images_per_s.png: one panel per dataset and cache state (its title says
    which), the profiles side by side, one bar per series in a colour of its
    own on a linear scale (steady-state images/s), each ringfeed bar labelled
    with its ratio to the DataLoader of the same pipeline, profile and cache
    state; the key in a panel of its own."""
    ps = panels(rep)
    # The series this report has (each keeps its own colour).
    series = [sr for sr in IMG_SERIES
              if any(ok(find(p, *sr[1:5], c)) for p in rep["profiles"] for c in ("cold", "warm"))]
    n = len(series)
    gap = 1.5
    cores = rep["environment"].get("cores", "?")
    steady = any(m.get("steady") for p in rep["profiles"] for m in p["measurements"])
    widths = [220 + 190 * len(profs) for _, _, profs in ps] + [300]  # the last: the key
    total = sum(widths)
    what = ("images/s, steady state" if steady else "images/s, whole run (start-up included: a report from before "
            "the steady state)")
    gp = (f"set terminal pngcairo size {total},580 font ',10'\n"
          f"set output {gp_quote(os.path.join(out, 'images_per_s.png'))}\n"
          "set style fill solid 0.9 border -1\nset boxwidth 0.9\nset grid ytics\nset datafile missing 'NaN'\n"
          "set yrange [0:*]\nset offsets 0, 0, graph 0.12, 0\nset xtics noenhanced nomirror\nset key noenhanced\n"
          f"set multiplot title {gp_quote(f'{what} (batch 64, {cores} cores); ')}"
          f".{gp_quote('on each ringfeed bar: × the PyTorch DataLoader (same pipeline, profile, cache)')} noenhanced\n"
          "set tmargin 4\n")
    for i, (d, cache, profs) in enumerate(ps):
        gp += f"set origin {sum(widths[:i]) / total:.4f},0\nset size {widths[i] / total:.4f},1\n"
        bars, labels, tics = [], [], []
        for j, p in enumerate(profs):
            base = j * (n + gap)
            tics.append(f"{gp_quote(p['profile'])} {base + (n - 1) / 2:.2f}")
            for k, (_, tool, layout, pipeline, io, _, vs) in enumerate(series):
                m = find(p, tool, layout, pipeline, io, cache)
                v = m.get("images_per_s") if ok(m) else None
                bars.append(f"{base + k} {k} {'NaN' if v is None else f'{v:.3f}'}")
                ref = find(p, "pytorch", "small", vs, "buffered", cache) if vs else None
                if v is not None and ok(ref) and ref.get("images_per_s"):
                    labels.append(f"{base + k} {v:.3f} \"{v / ref['images_per_s']:.2f}×\"")
        gp += f"$bars{i} << EOD\n" + "\n".join(bars) + "\nEOD\n"
        gp += f"$labels{i} << EOD\n" + ("\n".join(labels) or "0 NaN \"\"") + "\nEOD\n"
        gp += (f"set title {gp_quote(f'{DATASET_NAMES.get(d, d)}, {cache} page cache')} noenhanced\n"
               f"set xtics ({', '.join(tics)})\nset xrange [-1:{len(profs) * (n + gap) - gap}]\n"
               f"set ylabel {gp_quote('images/s' if i == 0 else '')}\nunset key\n")
        gp += ("plot " + ", ".join(
            f"$bars{i} using 1:($2 == {k} ? $3 : NaN) with boxes lc rgb '{c}' notitle"
            for k, (_, _, _, _, _, c, _) in enumerate(series))
            + f", $labels{i} using 1:2:3 with labels rotate by 90 left offset 0,0.4 font ',9' notitle\n")
    # The key, in a panel of its own: every series, each in its colour.
    gp += (f"set origin {sum(widths[:-1]) / total:.4f},0\nset size {widths[-1] / total:.4f},1\n"
           "unset title\nunset border\nunset tics\nunset grid\nunset ylabel\nset xrange [0:1]\nset yrange [0:1]\n"
           "set key center center vertical Left reverse samplen 2\nplot "
           + ", ".join(f"NaN with boxes lc rgb '{c}' title {gp_quote(t)}" for t, *_, c, _ in series)
           + "\nunset multiplot\n")

    imagenet = [p for p in rep["profiles"] if dataset(p) != "large"]
    cache = "cold" if any(m["cache"] == "cold" for p in imagenet for m in p["measurements"]) else "warm"
    rows = ["profile " + " ".join(f'"{t}"' for t, *_ in MB_SERIES)]
    for p in imagenet:
        vals = []
        for _, tool, layout, pipeline, io, _ in MB_SERIES:
            m = find(p, tool, layout, pipeline, io, cache)
            vals.append(f"{m['mb_per_s']:.3f}" if ok(m) and m.get("mb_per_s") else "NaN")
        rows.append(f'"{p["profile"]}" ' + " ".join(vals))
    mb = ("set terminal pngcairo size 980,520 font ',10'\n"
          f"set output {gp_quote(os.path.join(out, 'mb_per_s_vs_fio.png'))}\n"
          "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.9 border -1\n"
          "set boxwidth 0.9\nset grid ytics\nset logscale y\nset key outside right top vertical Left reverse "
          "noenhanced\nset xtics noenhanced\nset datafile missing 'NaN'\n"
          f"set title {gp_quote(f'raw reads against fio, ImageNet-like, {cache} page cache: MB/s (log scale)')} "
          "noenhanced\nset ylabel 'MB/s'\n"
          "$d << EOD\n" + "\n".join(rows) + "\nEOD\n"
          "plot " + ", ".join(f"$d using {k + 2}:xtic(1) lc rgb '{c}' title columnheader({k + 2})"
                              for k, (*_, c) in enumerate(MB_SERIES)) + "\n")
    any_mb = any(v != "NaN" for r in rows[1:] for v in r.split()[1:])
    return {"images_per_s": gp, "mb_per_s_vs_fio": mb if any_mb else ""}


def plots(rep: dict, out: str) -> list[str]:
    if not shutil.which("gnuplot"):
        return ["gnuplot not found: no plots"]
    if not rep["profiles"]:
        return []
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, gp in plot_scripts(rep, out).items():
            if not gp:
                continue
            path = os.path.join(tmp, name + ".gp")
            with open(path, "w") as f:
                f.write(gp)
            r = subprocess.run(["gnuplot", path], capture_output=True, text=True)
            if r.returncode != 0:
                problems.append(f"gnuplot {name}: {r.stderr.strip()[-300:]}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raw", help="directory of suite_measure.py's per-profile JSON")
    ap.add_argument("--run", help="perf/run's run.json")
    ap.add_argument("--from", dest="from_json", help="re-render from an existing report.json")
    ap.add_argument("--out", help="output directory (default: that of --from)")
    a = ap.parse_args()
    if a.from_json:
        with open(a.from_json) as f:
            rep = json.load(f)
        out = a.out or os.path.dirname(os.path.abspath(a.from_json))
    elif a.raw and a.run and a.out:
        rep = build_report(a.raw, a.run)
        out = a.out
    else:
        ap.error("give --raw, --run and --out, or --from")
    os.makedirs(out, exist_ok=True)
    if not a.from_json or os.path.abspath(a.from_json) != os.path.abspath(os.path.join(out, "report.json")):
        with open(os.path.join(out, "report.json"), "w") as f:
            json.dump(rep, f, indent=1)
    for problem in plots(rep, out):
        print(f"[perf] {problem}", file=sys.stderr)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(markdown(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
