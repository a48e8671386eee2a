#!/usr/bin/python3
"""ringfeed against the data loaders people pick instead of it, in one run.

Contenders (one module each in perf/compare/peers/, which says how each one
departs from the recipe and whether its pixels can equal torchvision's):
ringfeed on the folder, on tar shards and in exact mode; torch's DataLoader;
SPDL; NVIDIA DALI (CPU pipeline); FFCV; WebDataset; MosaicML Streaming;
LitData; torchdata nodes. The recipe is RandomResizedCrop(224) + flip +
ToTensor + Normalize -> float32 NCHW batches of 64, or each peer's nearest.

Setup, reproducible from this script alone: every peer runs in the venv
--venv (default ~/.cache/ringfeed/venv-peers), created here when missing
(or with --setup): python3 -m venv, then peers.BASE (torch, torchvision,
numpy, Pillow, pinned) and each peer's PACKAGES (pinned), one pip call per
peer so one that fails to install is recorded (with pip's error) and the
rest go on. No global install, except the Debian packages a peer lists in
DEBIAN (OpenCV's -dev files FFCV compiles against, the FFmpeg libraries
spdl.io loads): before its pip call, the missing ones (dpkg-query) are
installed with apt-get install --no-install-recommends, as root or through
sudo, as bootstrap.sh's install_deps does; every run checks them, and an
apt failure is that peer's reason for not being measured. ringfeed itself
comes from the build tree (build/release/python, the same CPython ABI as
the venv).

Each peer's own format (tar shards from `ringfeed pack`, MDS, LitData
chunks, .beton) is built once from --source, outside the timing. Then for
each round, each contender (the order rotated every round) runs in a fresh
process pinned to --cpus with --threads workers/threads: --epochs epochs
(default 2), the last one timed from iter() to its last batch, touching
every batch alike. Medians over rounds, per contender:

  images/s        images of the timed epoch / its wall time
  CPU s/image     user+system CPU of the timed epoch, of the process and
                  every descendant (worker processes, threads), from /proc
  run CPU s       the same tree's CPU over the whole run (start-up, both
                  epochs), from the same /proc sampler (getrusage(RUSAGE_CHILDREN) around
                  the child would miss worker processes that exit unreaped)
  peak PSS MB     the tree's summed proportional set size (shared pages
                  counted once), sampled every batch of the first epoch
                  and at the end
  first batch s   from spawning the process (interpreter, imports, loader
                  construction, workers) to holding the first batch

A peer that cannot be installed, prepared or run is listed with the reason.

  python3 perf/compare/compare_peers.py --source /tmp/pgen2k/train --rounds 2 --threads 2 \\
      --out perf/results/peers_2core.json --md perf/results/peers_2core.md
"""
import argparse
import importlib
import importlib.metadata
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import peers  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


# --- the venv ---------------------------------------------------------------

def pip_error(text):
    """The lines of pip's output that say why it failed."""
    lines = [ln.strip() for ln in text.splitlines() if "WARNING: Location" not in ln]
    hits = [ln for ln in lines if "Error:" in ln or ln.startswith("ERROR") or "not found" in ln]
    return "; ".join(dict.fromkeys(hits[:2] + hits[-1:])) or (lines[-1] if lines else "pip failed")


def debian_missing(packages):
    """The Debian packages of `packages` that dpkg does not list as installed."""
    def installed(p):
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
        return "install ok installed" in r.stdout
    return [p for p in packages if not installed(p)]


def apt_install(packages):
    """Install the missing ones of `packages`, as bootstrap.sh's install_deps does.

    Returns None, or why not. apt-get as root, or through sudo when not root
    (its password prompt, if any, on the terminal); the current package lists
    first, refreshed (apt-get update) only if that fails.
    """
    if not shutil.which("apt-get") or not shutil.which("dpkg-query"):
        return f"needs the Debian packages {' '.join(packages)} and this is no Debian (no apt-get, dpkg-query)"
    missing = debian_missing(packages)
    if not missing:
        return None
    root = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = root + ["apt-get", "install", "-y", "-q", "--no-install-recommends"] + missing
    print(f"apt-get install {' '.join(missing)}", file=sys.stderr)
    try:
        r = subprocess.run(install, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            subprocess.run(root + ["apt-get", "update", "-q"], capture_output=True, text=True, env=env)
            r = subprocess.run(install, capture_output=True, text=True, env=env)
    except OSError as e:  # no sudo
        return f"apt-get install {' '.join(missing)} failed: {e}"
    if r.returncode != 0:
        lines = [ln.strip() for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
        why = [ln for ln in lines if ln.startswith(("E:", "sudo:"))] or lines[-1:] or ["exit %d" % r.returncode]
        return f"apt-get install {' '.join(missing)} failed: {'; '.join(dict.fromkeys(why))}"
    return None


def install_key(m):
    """A peer's entry in the install record: its pins, and the Debian packages they were tried with.

    Listing DEBIAN in the key means a pip failure recorded before a peer had
    (or with other) Debian packages is tried again, not read back.
    """
    debian = getattr(m, "DEBIAN", None)
    return " ".join(m.PACKAGES) + (f" [with Debian {' '.join(debian)}]" if debian else "")


def setup_venv(venv, force):
    """Create the venv, install every peer's Debian packages, BASE and every peer's pins.

    Returns ({install_key: None | pip's error}, {peer: apt's error}). A peer
    whose Debian packages do not install gets no pip install (its build or
    import would fail for that reason).
    """
    record = os.path.join(venv, "ringfeed-peers-install.json")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        print(f"creating {venv}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    done, apt_failed = {}, {}
    if os.path.exists(record) and not force:
        with open(record) as f:
            done = json.load(f)
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    wanted = {" ".join(peers.BASE): []}
    for name in peers.ORDER:
        m = peer(name)
        err = apt_install(m.DEBIAN) if getattr(m, "DEBIAN", None) else None
        if err:
            apt_failed[name] = err
            continue
        if m.PACKAGES:
            wanted[install_key(m)] = m.PACKAGES
    for key, pins in wanted.items():
        if key in done:
            continue
        print(f"pip install {' '.join(pins) or key}", file=sys.stderr)
        r = subprocess.run(pip + peers.BASE + pins, capture_output=True, text=True)
        done[key] = None if r.returncode == 0 else pip_error(r.stdout + r.stderr)
        with open(record, "w") as f:
            json.dump(done, f, indent=1)
    if done.get(" ".join(peers.BASE)):
        sys.exit(f"the base packages do not install: {done[' '.join(peers.BASE)]}")
    return done, apt_failed


def peer(name):
    return importlib.import_module(f"peers.{name}")


# --- the child: one contender, one run --------------------------------------

class TreeCPU:
    """CPU seconds of this process and every descendant, alive or exited.

    A background thread reads /proc every 50 ms and keeps, per pid, the last
    utime+stime it saw; the total is their sum. A process's CPU therefore
    counts even when it exits unreaped or is reaped by someone other than its
    parent (cutime/cstime would miss both), and nothing counts twice. What a
    process burns in its last 50 ms before exit is missed; a sample costs
    about 2 ms of CPU with 70 processes on the machine (every contender pays it).
    """

    def __init__(self):
        self.seen, self.lock = {}, threading.Lock()
        self.sample()
        threading.Thread(target=self.run, daemon=True).start()

    @staticmethod
    def procs():
        out = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        s = f.read()
                except OSError:
                    continue
                fields = s[s.rindex(")") + 2:].split()
                # (ppid, utime + stime, start time): the start time tells a reused pid apart
                out[int(d)] = (int(fields[1]), int(fields[11]) + int(fields[12]), fields[19])
        return out

    def tree(self, procs):
        mine, frontier = set(), [os.getpid()]
        while frontier:
            p = frontier.pop()
            mine.add(p)
            frontier += [c for c, v in procs.items() if v[0] == p and c not in mine]
        return mine

    def sample(self):
        procs = self.procs()
        with self.lock:
            for p in self.tree(procs):
                self.seen[(p, procs[p][2])] = procs[p][1]

    def run(self):
        while True:
            time.sleep(0.05)
            self.sample()

    def seconds(self):
        self.sample()
        with self.lock:
            return sum(self.seen.values()) / TICK

    def pss_mb(self):
        mb = 0.0
        for p in self.tree(self.procs()):
            try:
                with open(f"/proc/{p}/smaps_rollup") as f:
                    mb += sum(int(ln.split()[1]) for ln in f if ln.startswith("Pss:")) / 1024
            except OSError:
                pass
        return mb


def child(args):
    cpu_of = TreeCPU()
    ctx = context(args)
    mod = peer(args.child)
    epoch_of = mod.make(ctx)
    first, peak, check, shape = None, 0.0, 0.0, None
    for e in range(args.epochs):
        timed = e == args.epochs - 1
        if timed:
            cpu0, start, images = cpu_of.seconds(), time.perf_counter(), 0
        for x, y in epoch_of(e):
            if first is None:
                first = time.time() - args.t0
                shape = f"{tuple(x.shape)} {x.dtype}"
            check += float(x.reshape(x.shape[0], -1)[:, 0].float().sum()) + int(y.sum())
            if timed:
                images += x.shape[0]
            else:
                peak = max(peak, cpu_of.pss_mb())
        if timed:
            seconds, cpu = time.perf_counter() - start, cpu_of.seconds() - cpu0
    peak = max(peak, cpu_of.pss_mb())
    print(json.dumps({"images": images, "seconds": seconds, "cpu": cpu, "run_cpu": cpu_of.seconds(),
                      "first_batch": first, "pss_mb": peak, "shape": shape, "checksum": check}))
    sys.stdout.flush()
    os._exit(0)  # some peers' worker threads and shared memory outlive a clean interpreter exit by minutes


def prepare_child(args):
    """Check the peer can be used here and build its format; prints {"skip": reason | None}."""
    mod = peer(args.prepare)
    reason = mod.skip(context(args)) if hasattr(mod, "skip") else None
    if reason is None:
        for pin in mod.PACKAGES:  # the packages themselves import
            name = pin.split("==")[0]
            dist = importlib.metadata.distribution(name)
            top = ((dist.read_text("top_level.txt") or "").split() or [name.replace("-", "_")])[0]
            importlib.import_module({"nvidia-dali-cuda120": "nvidia.dali", "mosaicml-streaming": "streaming"}
                                    .get(name, top))
        if hasattr(mod, "prepare"):
            mod.prepare(context(args))
    print(json.dumps({"skip": reason}))


def context(args):
    return types.SimpleNamespace(source=args.source, work=args.work, threads=args.threads, batch=args.batch,
                                 seed=1, cli=args.cli)


# --- the driver -------------------------------------------------------------

def last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    errs = [ln for ln in lines if "Error" in ln or "error" in ln]
    return (errs or lines or ["(no output)"])[-1].strip()[:500]


def spawn(args, py, mode, name, timeout):
    """Runs one child; returns (its JSON or None, error text)."""
    cmd = [py, os.path.abspath(__file__), mode, name, "--source", args.source, "--work", args.work,
           "--threads", str(args.threads), "--batch", str(args.batch), "--epochs", str(args.epochs),
           "--cli", args.cli, "--t0"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [args.ringfeed_python,
                                                                    os.environ.get("PYTHONPATH")])))
    cmd.append(repr(time.time()))
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout,
                              preexec_fn=lambda: os.sched_setaffinity(0, args.cpu_set))
    except subprocess.TimeoutExpired as e:
        return None, f"timed out after {timeout} s: {last_line((e.stderr or b'').decode(errors='replace'))}"
    try:
        return json.loads(done.stdout.strip().splitlines()[-1]), None
    except (IndexError, ValueError):
        return None, f"exit {done.returncode}: {last_line(done.stderr)}"


def med(runs, key):
    return statistics.median(r[key] for r in runs)


def summarize(args, runs, skipped):
    rows = []
    for name, rs in runs.items():
        m = peer(name)
        rows.append({"name": name, "label": m.NAME, "images_per_s": med(rs, "ips"), "cpu_s_per_image": med(rs, "cpi"),
                     "run_cpu_s": med(rs, "run_cpu"), "peak_pss_mb": med(rs, "pss_mb"),
                     "first_batch_s": med(rs, "first_batch"), "batch": rs[0]["shape"], "differs": m.DIFFERS,
                     "pixels_equal_torchvision": m.PIXELS, "packages": m.PACKAGES,
                     "debian": getattr(m, "DEBIAN", []), "runs": rs})
    rows.sort(key=lambda r: -r["images_per_s"])
    return rows, goal_of(rows)


def goal_of(rows):
    """The issue's goal for ringfeed's best row against the best peer's, and
    again without the pixel cache (whose decode happened before the rounds,
    as FFCV's .beton and the other formats were built before them)."""
    def one(ours, theirs):
        best_peer, best_rf = theirs[0], ours[0]
        g = {"best_peer": best_peer["label"], "best_ringfeed": best_rf["label"],
             "speed_ratio": best_rf["images_per_s"] / best_peer["images_per_s"],
             "cpu_ratio": best_rf["cpu_s_per_image"] / best_peer["cpu_s_per_image"],
             "goal": "speed_ratio >= 1.5 and cpu_ratio <= 0.67"}
        g["met"] = g["speed_ratio"] >= 1.5 and g["cpu_ratio"] <= 0.67
        return g

    ours = [r for r in rows if r["name"].startswith("ringfeed")]
    theirs = [r for r in rows if not r["name"].startswith("ringfeed")]
    if not ours or not theirs:
        return None
    goal = one(ours, theirs)
    decoding = [r for r in ours if r["name"] != "ringfeed_pixel_cache"]
    if decoding and decoding[0] is not ours[0]:
        goal["without_pixel_cache"] = one(decoding, theirs)
    return goal


def table(rows, skipped, goal, meta):
    out = [f"Peers on {meta['cpus']} cores ({meta['threads']} threads/workers each), {meta['images']} JPEGs, "
           f"batch {meta['batch']}, {meta['rounds']} rounds, medians; epoch {meta['epochs']} of "
           f"{meta['epochs']} timed. Load average at start {meta['load_start']}, end {meta['load_end']}.", "",
           "| contender | images/s | CPU ms/image | run CPU s | peak PSS MB | first batch s | pixels = torchvision? |",
           "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append(f"| {r['label']} | {r['images_per_s']:.0f} | {1000 * r['cpu_s_per_image']:.1f} | "
                   f"{r['run_cpu_s']:.1f} | {r['peak_pss_mb']:.0f} | {r['first_batch_s']:.1f} | "
                   f"{r['pixels_equal_torchvision']} |")
    for s in skipped:
        reason = s["reason"].replace("|", "/")
        out.append(f"| {s['label']} | not measured: {reason[:300] + ('…' if len(reason) > 300 else '')} | | | | | |")
    if goal:
        out += ["", f"Goal (>= 1.5x the best peer's images/s, <= 0.67x its CPU s/image): {goal['best_ringfeed']} "
                f"vs {goal['best_peer']}: {goal['speed_ratio']:.2f}x images/s, {goal['cpu_ratio']:.2f}x CPU/image "
                f"-> {'met' if goal['met'] else 'NOT met'}."]
        if "without_pixel_cache" in goal:
            g = goal["without_pixel_cache"]
            out += [f"Decoding every epoch (no pixel cache): {g['best_ringfeed']} vs {g['best_peer']}: "
                    f"{g['speed_ratio']:.2f}x images/s, {g['cpu_ratio']:.2f}x CPU/image -> "
                    f"{'met' if g['met'] else 'NOT met'}."]
    out += ["", "How each departs from the recipe:", ""]
    out += [f"- {r['label']}: {r['differs'] or 'as the recipe'}" for r in rows]
    out += ["", "```", meta["command"], "```", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="an ImageFolder directory (class subfolders of JPEGs)")
    ap.add_argument("--work", default="/tmp/ringfeed-peers", help="where the peers' formats are built")
    ap.add_argument("--venv", default=os.path.expanduser("~/.cache/ringfeed/venv-peers"))
    ap.add_argument("--setup", action="store_true", help="(re)run every pip install, even if recorded")
    ap.add_argument("--peers", default=",".join(peers.ORDER), help="which contenders, in peers/")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)), help="workers/threads each")
    ap.add_argument("--cpus", help="cores to pin every contender to, e.g. 0,1 (default: all allowed)")
    ap.add_argument("--epochs", type=int, default=2, help="epochs per run; the last one is timed")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--timeout", type=int, default=900, help="seconds one run may take")
    ap.add_argument("--cli", default=os.environ.get("RINGFEED_CLI", os.path.join(REPO, "build/release/bin/ringfeed")))
    ap.add_argument("--ringfeed-python", default=os.path.join(REPO, "build/release/python"))
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--md", help="write a markdown table here")
    ap.add_argument("--plot", help="write a PNG of images/s and CPU ms/image per contender here (gnuplot)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--prepare", help=argparse.SUPPRESS)
    ap.add_argument("--t0", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if args.prepare:
        return prepare_child(args)
    args.cpu_set = {int(c) for c in args.cpus.split(",")} if args.cpus else os.sched_getaffinity(0)
    names = args.peers.split(",")
    installed, apt_failed = setup_venv(args.venv, args.setup)
    py = os.path.join(args.venv, "bin", "python")
    os.makedirs(args.work, exist_ok=True)
    skipped, live = [], []
    for name in names:  # install, import, build its format: once, outside the timing
        m = peer(name)
        reason = getattr(m, "SKIP", None) or apt_failed.get(name)
        if not reason and m.PACKAGES and installed.get(install_key(m)):
            reason = f"pip install {' '.join(m.PACKAGES)} failed: {installed[install_key(m)]}"
        if not reason:
            r, err = spawn(args, py, "--prepare", name, args.timeout)
            reason = err and f"setup failed: {err}" or r["skip"]
        if reason:
            print(f"{m.NAME}: not measured: {reason}", file=sys.stderr)
            skipped.append({"name": name, "label": m.NAME, "reason": reason, "packages": m.PACKAGES})
        else:
            live.append(name)
    load_start = os.getloadavg()[0]
    runs = {n: [] for n in live}
    for rnd in range(args.rounds):
        order = live[rnd % len(live):] + live[:rnd % len(live)] if live else []
        for name in order:
            if name not in runs:
                continue
            r, err = spawn(args, py, "--child", name, args.timeout)
            if r is None:
                print(f"{peer(name).NAME}: run failed: {err}", file=sys.stderr)
                skipped.append({"name": name, "label": peer(name).NAME, "reason": f"run failed: {err}",
                                "packages": peer(name).PACKAGES})
                del runs[name]
                continue
            r.update(ips=r["images"] / r["seconds"], cpi=r["cpu"] / r["images"])
            runs[name].append(r)
            print(f"round {rnd + 1}/{args.rounds} {peer(name).NAME}: {r['ips']:.0f} img/s, "
                  f"{1000 * r['cpi']:.1f} CPU ms/img, first batch {r['first_batch']:.1f} s, "
                  f"PSS {r['pss_mb']:.0f} MB, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    rows, goal = summarize(args, runs, skipped)
    meta = {"cpus": len(args.cpu_set), "threads": args.threads, "batch": args.batch, "rounds": args.rounds,
            "epochs": args.epochs, "images": rows[0]["runs"][0]["images"] if rows else None,
            "load_start": round(load_start, 2), "load_end": round(os.getloadavg()[0], 2),
            "command": "python3 perf/compare/compare_peers.py " + " ".join(sys.argv[1:]),
            "base_packages": peers.BASE, "recipe": peers.RECIPE,
            # every package of the venv the run used, as pip names them: what a rerun installs
            "venv_packages": subprocess.run([py, "-m", "pip", "freeze", "--disable-pip-version-check"],
                                            capture_output=True, text=True).stdout.split()}
    text = table(rows, skipped, goal, meta)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(meta, rows=rows, skipped=skipped, goal=goal), f, indent=2)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    if args.plot:
        import peers_plot
        why = peers_plot.plot(dict(meta, rows=rows), args.plot)
        print(why or f"plot: {args.plot}", file=sys.stderr)


if __name__ == "__main__":
    main()
