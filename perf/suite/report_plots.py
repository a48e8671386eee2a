"""The report's PNG plots (suite_report.py): the gnuplot scripts of
images_per_s.png and mb_per_s_vs_fio.png, and gnuplot run on them."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from report_cells import DATASET_NAMES, DATASET_ORDER, dataset, find, ok, profile_key


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
