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

Beside it: report_cells.py (finding and formatting a cell),
report_sections.py (rounds, ratios, start-up), report_markdown.py
(report.md) and report_plots.py (the gnuplot plots).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import time

from report_cells import disagreeing_cells, profile_key
from report_markdown import markdown
from report_plots import plots
from report_sections import ratio_rows


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
