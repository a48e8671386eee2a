#!/usr/bin/env python3
"""Prints a markdown table comparing ringfeed's benchmarks with their baselines.

Usage: compare_runtime.py RESULTS_DIR

RESULTS_DIR holds one Google Benchmark JSON file per executable, written with
--benchmark_repetitions=N --benchmark_report_aggregates_only=true (see
perf/run_runtime_benchmarks). Benchmarks are named
`<impl>/<workload>[/<arg>:<value>...]` (perf/bench/bench_support.hpp); an impl
starting with `ringfeed` is ringfeed's, anything else is a baseline. A
baseline pairs with a ringfeed row when the workload is the same and each of
the baseline's args has the same value in the ringfeed row (so `pread.1thread`
without `depth` or `workers` pairs with every ringfeed depth and pool size).

Ratio = ringfeed median wall time / baseline median wall time for the same
work: below 1.00 ringfeed is faster, above 1.00 it is slower.

Reference pairs (REFERENCES): a ringfeed workload with no baseline of its own
that does strictly more than some baseline is also shown against it, marked
"(… alone)": decode_bench's val, train and decode_region (decode + transform,
or a region decode) against TurboJPEG's full `decode` of the same files. There
the ratio says what the whole transform costs relative to libjpeg-turbo's bare
decode (below 1.00: fast mode's scaled / region decoding more than pays for
the resampling).
Standard library only.
"""

from __future__ import annotations

import json
import math
import pathlib
import sys
from dataclasses import dataclass, field

TIME_SCALE_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
# ringfeed workload -> the baseline workload it is also compared with when it
# has no baseline of its own (see the module doc).
REFERENCES = {"val": "decode", "train": "decode", "decode_region": "decode"}
# Workloads whose items are images (items_per_second is images/s).
IMAGE_WORKLOADS = {"decode", "decode_scaled", "decode_region", "val", "train", "resize", "resize_window",
                   "resized_crop"}
STANDARD_KEYS = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "threads", "aggregate_name", "aggregate_unit", "iterations", "real_time", "cpu_time",
    "time_unit", "items_per_second", "bytes_per_second", "error_occurred", "error_message",
    "repetition_index", "label", "cores",
}


@dataclass
class row:
    run_name: str
    impl: str
    workload: str
    args: dict[str, str]
    stats: dict[str, dict] = field(default_factory=dict)  # aggregate name -> JSON entry
    error: str | None = None

    @property
    def key(self) -> str:
        return "/".join([self.workload] + [f"{k}:{v}" for k, v in self.args.items()])

    def time_ns(self, aggregate: str = "median") -> float | None:
        e = self.stats.get(aggregate)
        if e is None:
            return None
        return float(e["real_time"]) * TIME_SCALE_NS.get(e.get("time_unit", "ns"), 1.0)

    def counter(self, name: str, aggregate: str = "median") -> float | None:
        e = self.stats.get(aggregate)
        return None if e is None or name not in e else float(e[name])

    def is_ringfeed(self) -> bool:
        return self.impl.startswith("ringfeed")


def split_name(run_name: str) -> tuple[str, str, dict[str, str]]:
    skip = ("repeats:", "min_time:", "iterations:")
    parts = [p for p in run_name.split("/") if p and p != "real_time" and not p.startswith(skip)]
    impl = parts[0]
    workload = parts[1] if len(parts) > 1 else ""
    args = {}
    for p in parts[2:]:
        k, _, v = p.partition(":")
        args[k] = v
    return impl, workload, args


def load_json(path: pathlib.Path) -> tuple[dict | None, str | None]:
    text = path.read_text()
    if not text.strip():
        return None, "empty output (the executable produced nothing; see its .log)"
    try:
        return json.loads(text), None
    except json.JSONDecodeError:
        # A run that was killed leaves an unterminated "benchmarks" array:
        # keep what finished.
        salvaged = text.rstrip().rstrip(",") + "\n]\n}\n"
        try:
            return json.loads(salvaged), ("incomplete output (killed or crashed?); "
                                          "kept the finished benchmarks")
        except json.JSONDecodeError as e:
            return None, f"unreadable JSON: {e}"


def fmt_time(ns: float | None) -> str:
    if ns is None:
        return "—"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def fmt_rate(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {suffix}{unit}"
    return f"{value:.3g} {unit}"


def fmt_throughput(r: row) -> str:
    b = r.counter("bytes_per_second")
    items = r.counter("items_per_second")
    cores = r.counter("cores")
    if r.workload in IMAGE_WORKLOADS and items is not None:
        s = fmt_rate(items, "images/s") + (f" ({b / 1e6:,.0f} MB/s in)" if b is not None else "")
    elif b is not None:
        s = f"{b / 1e6:,.0f} MB/s" + (f", {fmt_rate(items, 'files/s')}" if items is not None else "")
    else:
        s = fmt_rate(items, "items/s") if items is not None else "—"
    return s + (f", {cores:.2f} cores" if cores is not None else "")


def fmt_spread(r: row) -> str:
    med = r.time_ns("median")
    lo, hi = r.time_ns("min"), r.time_ns("max")
    cv_entry = r.stats.get("cv")
    parts = []
    if cv_entry is not None:
        parts.append(f"cv {100 * float(cv_entry['real_time']):.1f}%")
    if med and lo is not None and hi is not None:
        parts.append(f"range {100 * (hi - lo) / med:.1f}%")
    return ", ".join(parts) if parts else "—"


def fmt_ratio(a: float | None, b: float | None) -> str:
    if not a or not b or math.isnan(a) or math.isnan(b):
        return "—"
    ratio = a / b
    verdict = "faster" if ratio < 1 else "slower"
    factor = 1 / ratio if ratio < 1 else ratio
    shown = f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"
    return f"**{shown}** ({factor:.3g}× {verdict})" if factor >= 1.05 else f"**{shown}** (same)"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    results = pathlib.Path(argv[1])
    files = sorted(results.glob("*.json"))
    if not files:
        print(f"no *.json results in {results}", file=sys.stderr)
        return 1

    rows: dict[str, row] = {}
    problems: list[str] = []
    context: dict | None = None
    for path in files:
        log = path.with_suffix(".log")
        filtered_out = log.exists() and "Failed to match any benchmarks" in log.read_text()
        if filtered_out and not path.read_text().strip():
            continue  # --benchmark_filter matched nothing in this executable
        data, note = load_json(path)
        if note:
            problems.append(f"`{path.name}`: {note}")
        if data is None:
            continue
        context = context or data.get("context")
        for e in data.get("benchmarks", []):
            run_name = e.get("run_name", e.get("name", ""))
            if run_name not in rows:
                impl, workload, args = split_name(run_name)
                rows[run_name] = row(run_name, impl, workload, args)
            r = rows[run_name]
            if e.get("error_occurred"):
                r.error = e.get("error_message", "error")
            elif e.get("run_type") == "aggregate":
                r.stats[e["aggregate_name"]] = e
            elif "median" not in r.stats:
                # Run without repetitions: a single iteration entry stands in.
                r.stats["median"] = e

    ours = [r for r in rows.values() if r.is_ringfeed()]
    baselines = [r for r in rows.values() if not r.is_ringfeed()]

    def matching(r: row, workload: str) -> list[row]:
        return [b for b in baselines
                if b.workload == workload and all(r.args.get(k) == v for k, v in b.args.items())]

    def paired(r: row) -> list[row]:
        """Same-workload baselines, else the reference workload's (REFERENCES)."""
        same = matching(r, r.workload)
        if same or r.workload not in REFERENCES:
            return same
        return matching(r, REFERENCES[r.workload])

    print("## ringfeed runtime micro-benchmarks vs baselines\n")
    if context:
        print(f"- host `{context.get('host_name', '?')}`, {context.get('num_cpus', '?')} CPUs at "
              f"{context.get('mhz_per_cpu', '?')} MHz")
    env = results / "environment.txt"
    if env.exists():
        busy, others = [], []
        for line in env.read_text().splitlines():
            if not line.startswith("other load during "):
                print(f"- {line}")
                continue
            name = line.split(":", 1)[0][len("other load during "):]
            try:
                cores = float(line.split(":", 1)[1].split()[0])
            except (IndexError, ValueError):
                continue
            others.append(f"{name} {cores:.2f}")
            if cores > 0.2:
                busy.append(f"{name} ({cores:.2f} cores)")
        if others:
            print(f"- other processes' load while each executable ran (cores): {', '.join(others)}")
        if busy:
            print(f"- **WARNING: other processes kept the machine busy during {', '.join(busy)}: "
                  "those numbers are not trustworthy; rerun on a quiet machine**")
    reps = next((int(e.get('repetitions', 0)) for r in rows.values() for e in r.stats.values()), 0)
    print(f"- every time is the **median of {reps} repetitions** of wall-clock time per benchmark iteration; "
          "spread: cv = stddev/mean, range = (max − min)/median")
    print("- throughput is the median rate; `cores` = process CPU time / wall time while measuring "
          "(CPU a pool burns, spinning included)")
    print("- **ratio = ringfeed median / baseline median (time for the same work): < 1.00 means ringfeed is "
          "faster, > 1.00 means ringfeed is slower**")
    print("- a baseline marked *(decode alone)* does less than the ringfeed row (a bare decode against decode + "
          "transform): the ratio is what the whole ringfeed step costs relative to that baseline's part\n")

    print("| workload | ringfeed | median | throughput | spread | baseline | median | throughput | spread "
          "| ratio ringfeed/baseline |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    def cells(r: row, of: row | None = None) -> str:
        name = f"`{r.impl}`"
        if of is not None and r.workload != of.workload:
            name += f" ({r.workload} alone)"
        return f"{name} | {fmt_time(r.time_ns())} | {fmt_throughput(r)} | {fmt_spread(r)}"

    for r in sorted(ours, key=lambda x: (x.workload, x.key, x.impl)):
        if r.error:
            print(f"| `{r.key}` | `{r.impl}` | **error**: {r.error} | | | | | | | |")
            continue
        for b in sorted(paired(r), key=lambda x: x.impl) or [None]:
            if b is None:
                print(f"| `{r.key}` | {cells(r)} | (no baseline) | | | | |")
            elif b.error:
                print(f"| `{r.key}` | {cells(r)} | `{b.impl}` | **error**: {b.error} | | | |")
            else:
                print(f"| `{r.key}` | {cells(r)} | {cells(b, r)} | {fmt_ratio(r.time_ns(), b.time_ns())} |")

    unpaired = [b for b in baselines if not any(b in paired(r) for r in ours)]
    if unpaired:
        print("\nBaselines without a ringfeed counterpart in these results: "
              + ", ".join(f"`{b.run_name}`" for b in unpaired))

    extra = []
    for r in sorted(rows.values(), key=lambda x: x.run_name):
        e = r.stats.get("median")
        if e is None:
            continue
        counters = {k: v for k, v in e.items() if k not in STANDARD_KEYS and isinstance(v, (int, float))}
        if counters:
            values = ", ".join(f"{k} = {v:.3g}" for k, v in sorted(counters.items()))
            extra.append(f"- `{r.run_name}`: {values}")
    if extra:
        print("\nOther counters (medians):")
        print("\n".join(extra))

    errors = [r for r in rows.values() if r.error]
    if problems or errors:
        print("\nProblems:")
        for p in problems:
            print(f"- {p}")
        for r in errors:
            print(f"- `{r.run_name}`: {r.error}")
    return 1 if (problems or errors) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
