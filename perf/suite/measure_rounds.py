"""A cell's rounds: the order they run in, how far apart they are, and the
one summary the report reads (suite_measure.py; suite_report.py flags the
cells whose rounds disagree)."""
from __future__ import annotations

import statistics

# A cell whose rounds are further apart than this ((max - min) / median of
# its rate) is flagged in the report: its median is not one number to trust.
SPREAD_LIMIT = 0.15


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
