#!/usr/bin/python3
"""Many cores (issue 17, target 3): does ringfeed's images/s grow with the
thread count as the bare decode does?

For thread counts 1, 2, 4, 8, ... up to every core this process may run on
(os.sched_getaffinity), plus the physical core count, it runs, interleaved
over --rounds rounds (round 1 all counts, round 2 all counts, ...):

  decode_limit  build/release/perf/decode_limit DIR --threads T: TurboJPEG's
                bare full decode of the same files held in memory (the limit
                a loader that decodes every file cannot beat)
  train         ringfeed bench DIR --pipeline train --threads T --json
                (fast mode, RandomResizedCrop 224 + flip + normalize)
  val           ringfeed bench DIR --pipeline val --threads T --json
                (Resize 256 + CenterCrop 224 + normalize)

on one `ringfeed gen` dataset (or --source), the page cache warmed first.
Each bench run covers enough epochs for about --seconds at the thread count
(from a 1-thread calibration run, assuming ideal scaling). Per workload and
thread count it reports the median images/s over the rounds, the efficiency
images/s / (T x images/s at 1 thread) -- goal >= 85% up to the physical core
count (from /sys/devices/system/cpu/*/topology, else lscpu) -- and, for
ringfeed, the bench JSON's stage utilizations, io_depth and bottleneck.

  /usr/bin/python3 perf/compare/scaling.py --json scaling.json
  /usr/bin/python3 perf/compare/scaling.py --threads 1,2 --rounds 2 --seconds 3   # a 2-core machine

Batches stay in host memory by default (--device -1: the CPU pipeline alone,
the same work on every machine); --device 0 adds the CUDA upload stage.
The CLI: --ringfeed, else $RINGFEED_CLI, else build/release/bin or
build/default/bin of this checkout; decode_limit likewise from
build/release/perf or build/default/perf (--decode-limit). Exit 0 also when
a goal is missed (it measures); 2 when a program is missing.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "perf", "common"))
from gen_dataset import ensure_gen  # noqa: E402
GOAL = 0.85


def first_existing(*paths):
    return next((p for p in paths if p and os.path.exists(p)), None)


def cpus():
    return sorted(os.sched_getaffinity(0))


def physical_cores(allowed):
    """Distinct (package, core) pairs among the CPUs this process may use."""
    pairs = set()
    for c in allowed:
        base = f"/sys/devices/system/cpu/cpu{c}/topology"
        try:
            with open(f"{base}/core_id") as fh:
                core = fh.read().strip()
            with open(f"{base}/physical_package_id") as fh:
                pkg = fh.read().strip()
        except OSError:
            pairs = None
            break
        pairs.add((pkg, core))
    if pairs:
        return len(pairs), "sysfs topology"
    try:
        out = subprocess.run(["lscpu", "-p=CPU,CORE,SOCKET"], capture_output=True, text=True, check=True).stdout
        rows = [line.split(",") for line in out.splitlines() if line and not line.startswith("#")]
        pairs = {(r[2], r[1]) for r in rows if int(r[0]) in set(allowed)}
        if pairs:
            return len(pairs), "lscpu"
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
        pass
    return len(allowed), "unknown (assumed one thread per core)"


def thread_ladder(n, physical):
    ts, t = [], 1
    while t < n:
        ts.append(t)
        t *= 2
    ts += [physical, n]
    return sorted(set(x for x in ts if 1 <= x <= n))


def find_cli(arg):
    return first_existing(arg, os.environ.get("RINGFEED_CLI"),
                          *(os.path.join(REPO, "build", p, "bin", "ringfeed") for p in ("release", "default"))) \
        or shutil.which("ringfeed")


def find_decode_limit(arg):
    return first_existing(arg, *(os.path.join(REPO, "build", p, "perf", "decode_limit") for p in ("release", "default")))


def gen_dataset(cli, out, images, classes):
    return ensure_gen(out, images, classes, cli, "scaling", extra=("--force",))


def image_files(source):
    files = []
    for root, _, names in os.walk(source):
        files += [os.path.join(root, n) for n in names if n.lower().endswith((".jpg", ".jpeg"))]
    return sorted(files)


def warm(files):
    size = 0
    for f in files:
        with open(f, "rb") as fh:
            while chunk := fh.read(1 << 20):
                size += len(chunk)
    return size


def last_json(stdout):
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON line in the output")


def run_json(cmd):
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"scaling: {' '.join(cmd)} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    out = last_json(done.stdout)
    out["_wall_s"] = time.perf_counter() - t0
    return out


def bench(args, pipeline, threads, epochs):
    cmd = [args.ringfeed, "bench", args.source, "--pipeline", pipeline, "--threads", str(threads), "--json",
           "--batch", str(args.batch), "--epochs", str(epochs), "--device", str(args.device)]
    if args.io_depth:
        cmd += ["--io-depth", str(args.io_depth)]
    j = run_json(cmd)
    st = j.get("stages", {})
    return {"images_per_s": j["images_per_s"], "images": j["images"], "seconds": j["seconds"],
            "epoch_images_per_s": j.get("epoch_images_per_s", []), "bottleneck": j.get("bottleneck"),
            "io_depth": j.get("io_depth"), "backend": j.get("backend"), "device": j.get("device"),
            "decode_utilization": st.get("decode_utilization"), "read_utilization": st.get("read_utilization"),
            "upload_utilization": st.get("upload_utilization"),
            "consumer_wait_share": st.get("consumer_wait_s", 0) / j["seconds"] if j.get("seconds") else None}


def decode_limit(args, threads, files):
    j = run_json([args.decode_limit, args.source, "--threads", str(threads), "--seconds", str(args.seconds),
                  "--files", str(files)])
    return {"images_per_s": j["images_per_s"], "cpu_cores": j.get("cpu_cores")}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", help="an ImageFolder of JPEGs (default: one made by `ringfeed gen`)")
    ap.add_argument("--threads", help="comma-separated thread counts (default 1, 2, 4, ... and all cores)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default %(default)s)")
    ap.add_argument("--seconds", type=float, default=4.0, help="about this long per run (default %(default)s)")
    ap.add_argument("--workloads", default="decode_limit,train,val", help="default %(default)s")
    ap.add_argument("--batch", type=int, default=64, help="ringfeed batch size (default %(default)s)")
    ap.add_argument("--device", type=int, default=-1, help="ringfeed bench --device (default -1: host batches)")
    ap.add_argument("--io-depth", type=int, default=0, help="ringfeed bench --io-depth (default 0: the probe's)")
    ap.add_argument("--ringfeed", help="the ringfeed CLI")
    ap.add_argument("--decode-limit", help="perf/decode_limit")
    ap.add_argument("--gen-dir", help="where `ringfeed gen` writes (default build/scaling/gen-N)")
    ap.add_argument("--gen-images", type=int, default=2000, help="images to generate (default %(default)s)")
    ap.add_argument("--gen-classes", type=int, default=20, help="classes to generate (default %(default)s)")
    ap.add_argument("--json", help="write the results here")
    return ap.parse_args()


def main():
    args = parse_args()
    workloads = [w for w in args.workloads.split(",") if w]
    allowed = cpus()
    physical, how = physical_cores(allowed)
    ladder = [int(t) for t in args.threads.split(",")] if args.threads else thread_ladder(len(allowed), physical)
    args.ringfeed = find_cli(args.ringfeed)
    if any(w != "decode_limit" for w in workloads) and not args.ringfeed:
        print("scaling: no ringfeed CLI (build it, or pass --ringfeed)", file=sys.stderr)
        return 2
    if "decode_limit" in workloads:
        args.decode_limit = find_decode_limit(args.decode_limit)
        if not args.decode_limit:
            print("scaling: no decode_limit (build perf/ with libturbojpeg0-dev, or pass --decode-limit)",
                  file=sys.stderr)
            return 2
    if not args.source:
        out = args.gen_dir or os.path.join(REPO, "build", "scaling", f"gen-{args.gen_images}")
        args.source = gen_dataset(args.ringfeed, out, args.gen_images, args.gen_classes)
    files = image_files(args.source)
    size = warm(files)
    print(f"scaling: {args.source}: {len(files)} JPEGs, {size / 2**20:.0f} MiB, page cache warmed; "
          f"{len(allowed)} CPUs allowed, {physical} physical cores ({how}); threads {ladder}; "
          f"{args.rounds} rounds of ~{args.seconds:g} s runs", flush=True)

    # Calibration at 1 thread (also a warm-up): epochs per run for ~--seconds.
    rate1 = {}
    for w in workloads:
        if w != "decode_limit":
            rate1[w] = bench(args, w, 1, 1)["images_per_s"]
            print(f"  calibration {w}: {rate1[w]:.0f} images/s at 1 thread", flush=True)

    def epochs_for(w, t):
        return max(1, math.ceil(args.seconds * rate1[w] * t / max(len(files), 1)))

    runs = {w: {t: [] for t in ladder} for w in workloads}
    for r in range(args.rounds):
        for t in ladder:
            for w in workloads:
                res = decode_limit(args, t, len(files)) if w == "decode_limit" else bench(args, w, t, epochs_for(w, t))
                runs[w][t].append(res)
                extra = f"  bottleneck {res['bottleneck']}" if "bottleneck" in res else ""
                print(f"  round {r + 1} threads {t:3d} {w:12s} {res['images_per_s']:9.1f} images/s{extra}", flush=True)

    table = {}
    for w in workloads:
        base = statistics.median(x["images_per_s"] for x in runs[w][ladder[0]]) / ladder[0]
        table[w] = {}
        for t in ladder:
            rows = runs[w][t]
            ips = statistics.median(x["images_per_s"] for x in rows)
            entry = {"images_per_s": ips, "per_thread": ips / t, "efficiency": ips / (t * base),
                     "spread": [min(x["images_per_s"] for x in rows), max(x["images_per_s"] for x in rows)]}
            if w != "decode_limit":
                last = rows[-1]
                for k in ("bottleneck", "io_depth", "backend", "device", "decode_utilization", "read_utilization",
                          "upload_utilization", "consumer_wait_share"):
                    entry[k] = last[k]
                entry["bottlenecks"] = sorted({x["bottleneck"] for x in rows})
            table[w][t] = entry

    print(f"\n{'workload':12s} {'threads':>7s} {'images/s':>10s} {'per thread':>10s} {'efficiency':>10s}  "
          f"{'spread':>17s}  ringfeed: decode util / read util / bottleneck (io_depth, backend)")
    goal_ok = True
    for w in workloads:
        for t in ladder:
            e = table[w][t]
            gate = t <= physical
            mark = "" if not gate else (" ok" if e["efficiency"] >= GOAL else " LOW")
            if gate and w != "decode_limit" and e["efficiency"] < GOAL:
                goal_ok = False
            tail = ""
            if w != "decode_limit":
                tail = (f"  {100 * (e['decode_utilization'] or 0):5.1f}% / {100 * (e['read_utilization'] or 0):5.1f}%"
                        f" / {','.join(e['bottlenecks'])} ({e['io_depth']}, {e['backend']})")
            print(f"{w:12s} {t:7d} {e['images_per_s']:10.1f} {e['per_thread']:10.1f} {100 * e['efficiency']:9.1f}%"
                  f"{mark:4s} [{e['spread'][0]:7.1f}, {e['spread'][1]:7.1f}]{tail}")
    ratio = {}
    if "decode_limit" in workloads:
        for w in workloads:
            if w != "decode_limit":
                ratio[w] = {t: table[w][t]["images_per_s"] / table["decode_limit"][t]["images_per_s"] for t in ladder}
                print(f"{w} / decode_limit: " + ", ".join(f"{t}: {v:.2f}x" for t, v in ratio[w].items()))
    if "decode_limit" in workloads:
        # The control: the bare decode shares nothing between threads, so when
        # it scales badly the machine (other load, SMT siblings, clocks) does.
        low = [t for t in ladder if t <= physical and table["decode_limit"][t]["efficiency"] < GOAL]
        if low:
            print(f"note: decode_limit itself is below {100 * GOAL:.0f}% at {low} threads: the cores were not all "
                  f"available (other processes, SMT siblings, clock limits); ringfeed's efficiency there says "
                  f"little (compare its ratio to decode_limit instead)")
    measured_to = max(t for t in ladder if t <= physical) if any(t <= physical for t in ladder) else 0
    print(f"goal: ringfeed efficiency >= {100 * GOAL:.0f}% up to {physical} physical cores: "
          f"{'met' if goal_ok else 'NOT met'} (measured up to {measured_to} threads"
          f"{'' if measured_to >= physical else '; more cores needed for the full check'})")
    result = {"source": args.source, "files": len(files), "bytes": size, "cpus_allowed": len(allowed),
              "physical_cores": physical, "physical_cores_from": how, "threads": ladder, "rounds": args.rounds,
              "seconds": args.seconds, "device": args.device, "batch": args.batch, "goal_efficiency": GOAL,
              "goal_met_up_to_physical": goal_ok, "measured_up_to": measured_to,
              "table": {w: {str(t): v for t, v in table[w].items()} for w in workloads},
              "ratio_to_decode_limit": {w: {str(t): v for t, v in r.items()} for w, r in ratio.items()},
              "runs": {w: {str(t): v for t, v in runs[w].items()} for w in workloads}}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
