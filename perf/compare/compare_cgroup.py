#!/usr/bin/env python3
"""ringfeed's default thread count and memory budget inside a cgroup
(issue 39), side by side with hand-set threads, in one run.

    sudo perf/compare/compare_cgroup.py build/release/bin/ringfeed DATA_DIR [--rounds 3]

Makes a cgroup v1 (or v2) group with a CPU quota of --cpus CPUs, and runs
`ringfeed bench DATA_DIR --json` in it with the defaults, with --threads
set to the quota by hand, and with the old default (one thread per CPU of
the affinity mask, --threads N), alternating them each round. Then a
group with a memory limit of --memory-mb: the default budget must fall
inside it and the run must not be killed. Prints one JSON line per run and
a summary with the ratios (median images/s of the defaults over the
hand-set quota). Needs root (it writes /sys/fs/cgroup) and removes its
groups at the end.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = "/sys/fs/cgroup"


def make_group(controller, name, settings):
    """A group under `controller` (v1) or the unified tree (v2); returns a
    function that runs a command in it."""
    v2 = os.path.exists(os.path.join(ROOT, "cgroup.controllers"))
    path = os.path.join(ROOT, name) if v2 else os.path.join(ROOT, controller, name)
    os.makedirs(path, exist_ok=True)
    for file, value in settings(v2).items():
        with open(os.path.join(path, file), "w") as f:
            f.write(value)

    def run(cmd):
        def enter():
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        return subprocess.run(cmd, capture_output=True, text=True, preexec_fn=enter)
    return path, run


def bench(run, cli, data, extra):
    proc = run([cli, "bench", data, "--pipeline", "val", "--batch", "32", "--epochs", "2", "--device", "-1",
                "--json", *extra])
    if proc.returncode != 0:
        return {"rc": proc.returncode, "stderr": proc.stderr[-400:]}
    out = json.loads(proc.stdout)
    return {"rc": 0, "images_per_s": out["images_per_s"], "threads": out["threads"],
            "threads_reason": out.get("threads_reason"), "memory_budget": out["memory_budget"],
            "memory_budget_reason": out.get("memory_budget_reason")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("data")
    ap.add_argument("--cpus", type=int, default=1)
    ap.add_argument("--memory-mb", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    affinity = len(os.sched_getaffinity(0))
    name = f"ringfeed-compare-{os.getpid()}"
    cpu_path, in_cpu = make_group("cpu", name, lambda v2: {"cpu.max": f"{a.cpus * 100000} 100000"} if v2 else {
        "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": str(a.cpus * 100000)})
    mem_path, in_mem = make_group("memory", name + "-mem", lambda v2: {
        "memory.max" if v2 else "memory.limit_in_bytes": str(a.memory_mb << 20)})
    runs = {"default": [], f"threads={a.cpus} by hand": [], f"old default threads={affinity}": []}
    try:
        for r in range(a.rounds):
            order = list(runs) if r % 2 == 0 else list(reversed(runs))
            for label in order:
                extra = [] if label == "default" else ["--threads", str(a.cpus if "hand" in label else affinity)]
                result = bench(in_cpu, a.cli, a.data, extra)
                result.update(label=label, round=r, cgroup=f"cpu quota {a.cpus}")
                print(json.dumps(result), flush=True)
                runs[label].append(result)
        mem = bench(in_mem, a.cli, a.data, [])
        mem.update(label="default", cgroup=f"memory limit {a.memory_mb} MiB")
        print(json.dumps(mem), flush=True)
    finally:
        for path in (cpu_path, mem_path):
            try:
                os.rmdir(path)
            except OSError:
                pass
    medians = {k: statistics.median(x["images_per_s"] for x in v if x["rc"] == 0) for k, v in runs.items()}
    hand = medians[f"threads={a.cpus} by hand"]
    print(f"\nCPU quota {a.cpus} (affinity mask {affinity} CPUs), {a.rounds} rounds, median images/s:")
    for k, v in medians.items():
        print(f"  {k:28s} {v:8.1f}  {v / hand:5.2f}x the hand-set quota")
    print(f"  default threads: {runs['default'][0].get('threads')} ({runs['default'][0].get('threads_reason')})")
    ok = mem["rc"] == 0 and mem["memory_budget"] < (a.memory_mb << 20)
    print(f"memory limit {a.memory_mb} MiB: rc {mem['rc']}, budget {mem.get('memory_budget')} "
          f"({mem.get('memory_budget_reason')}): {'inside the limit' if ok else 'NOT inside the limit'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
