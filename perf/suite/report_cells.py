"""Finding and formatting the cells of perf/run's report (suite_report.py):
profiles and datasets in report order, one measurement by its key, the
numbers as the tables print them, and the cells whose rounds disagree."""
from __future__ import annotations

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
