#!/usr/bin/python3
"""The peers' plot: images/s and CPU ms per image of every contender that
ran, two bar panels side by side, ringfeed's bars in one colour and the
peers' in another; from compare_peers.py's JSON.

    python3 perf/compare/peers_plot.py perf/results/peers_2core.json peers.png

compare_peers.py --plot F.png calls plot() after its run. Needs gnuplot
(Debian's gnuplot-nox, which bootstrap.sh installs).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def quote(text):
    return "'" + str(text).replace("'", "''") + "'"


def script(result, png):
    rows = [r for r in result["rows"]]
    data = []  # label, ringfeed's images/s, a peer's, ringfeed's CPU ms/image, a peer's
    for r in rows:
        ours = r["name"].startswith("ringfeed")
        ips, cpu = f"{r['images_per_s']:.1f}", f"{1000 * r['cpu_s_per_image']:.2f}"
        data.append(" ".join([quote(r["label"]).replace("'", '"'),
                              ips if ours else "NaN", "NaN" if ours else ips,
                              cpu if ours else "NaN", "NaN" if ours else cpu]))
    title = (f"{result['images']} JPEGs, batch {result['batch']}, {result['cpus']} cores, "
             f"{result['threads']} threads/workers each, median of {result['rounds']} rounds")
    width = max(900, 110 * len(rows))
    return (f"set terminal pngcairo size {2 * width},620 font ',10'\n"
            f"set output {quote(png)}\n"
            "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.9 border -1\n"
            "set boxwidth 0.75\nset grid ytics\nset datafile missing 'NaN'\nset yrange [0:*]\n"
            "set xtics rotate by -35 noenhanced nomirror\nset key noenhanced top right\nset bmargin 9\nset rmargin 8\n"
            f"$d << EOD\n" + "\n".join(data) + "\nEOD\n"
            f"set multiplot layout 1,2 title {quote(title)} noenhanced\n"
            "set title 'images/s (higher is better)'\n"
            "plot $d using 2:xtic(1) lc rgb '#1f77b4' title 'ringfeed', '' using 3 lc rgb '#aaaaaa' title 'peers'\n"
            "set title 'CPU ms per image, all processes and threads (lower is better)'\n"
            "plot $d using 4:xtic(1) lc rgb '#1f77b4' title 'ringfeed', '' using 5 lc rgb '#aaaaaa' title 'peers'\n"
            "unset multiplot\n")


def plot(result, png):
    """Writes `png`; returns None, or why there is no plot."""
    if not shutil.which("gnuplot"):
        return "gnuplot not found: no plot"
    if not result.get("rows"):
        return "no contender ran: no plot"
    with tempfile.NamedTemporaryFile("w", suffix=".gp", delete=False) as f:
        f.write(script(result, png))
    try:
        done = subprocess.run(["gnuplot", f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    return None if done.returncode == 0 else f"gnuplot failed: {done.stderr.strip()[-300:]}"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as fh:
        why = plot(json.load(fh), sys.argv[2])
    if why:
        sys.exit(why)
