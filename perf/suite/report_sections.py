"""The report's summary sections (suite_report.py): the cells whose rounds
disagree, the ratios to the bare-decode limit and the DataLoader, and
each loader's start-up."""
from __future__ import annotations

from measure_rounds import SPREAD_LIMIT
from report_cells import DATASET_NAMES, dataset, disagreeing_cells, disagrees, find, num, ok, profile_key


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
