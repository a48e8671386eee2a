"""The machine under perf/run's measurements (suite_measure.py): CPU time,
the block device under a folder and what it has read, the page cache
(dropped or warmed), and the runner every measured command goes through
(inside the profile's blkio cgroup when there is one)."""
from __future__ import annotations

import json
import os
import subprocess
import time

HZ = os.sysconf("SC_CLK_TCK")
IMAGE_EXTS = (".jpg", ".jpeg", ".png")


def log(msg: str) -> None:
    print(f"[perf] {msg}", flush=True)


def busy_seconds() -> float:
    """CPU time all CPUs spent busy since boot (user nice system irq softirq)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / HZ


def children_seconds() -> float:
    t = os.times()
    return t.children_user + t.children_system


def block_stat(d: str) -> str | None:
    """/sys/class/block/<dev>/stat of the block device holding d (None if unknown)."""
    r = subprocess.run(["findmnt", "-no", "SOURCE", "-T", d], capture_output=True, text=True)
    name = os.path.basename(os.path.realpath(r.stdout.strip())) if r.stdout.strip() else ""
    path = f"/sys/class/block/{name}/stat"
    return path if name and os.path.exists(path) else None


def device_read_bytes(stat: str | None) -> int | None:
    """Bytes read from the device so far (sectors read × 512)."""
    if stat is None:
        return None
    with open(stat) as f:
        return int(f.read().split()[2]) * 512


def list_files(d: str) -> list[str]:
    out = []
    for root, dirs, names in os.walk(d):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        out += [os.path.join(root, n) for n in names if not n.startswith(".")]
    return sorted(out)


def tree_bytes(d: str) -> int:
    return sum(os.path.getsize(p) for p in list_files(d))


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def warm(d: str) -> None:
    """Reads every file under d (outside any cgroup) into the page cache."""
    for p in list_files(d):
        with open(p, "rb", buffering=0) as f:
            while f.read(1 << 20):
                pass


class runner:
    """Runs commands, inside the blkio cgroup when there is one."""

    def __init__(self, cgroup: str | None, timeout: float):
        self.cgroup = cgroup
        self.timeout = timeout

    def wrap(self, cmd: list[str]) -> list[str]:
        if not self.cgroup:
            return cmd
        # The shell joins the cgroup, then execs the command: the command and
        # every thread or child it starts are throttled from their first I/O.
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', os.path.join(self.cgroup, "cgroup.procs")] + cmd

    def run(self, cmd: list[str], env: dict | None = None) -> dict:
        busy0, own0, t0 = busy_seconds(), children_seconds(), time.perf_counter()
        try:
            p = subprocess.run(self.wrap(cmd), capture_output=True, text=True, timeout=self.timeout, env=env)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc = 124
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = f"timed out after {self.timeout:.0f} s"
        wall = time.perf_counter() - t0
        other = max(0.0, (busy_seconds() - busy0) - (children_seconds() - own0))
        return {"rc": rc, "stdout": out, "stderr": err, "wall_s": wall, "cpu_s": children_seconds() - own0,
                "other_load_cores": other / wall if wall > 0.5 else None}


def last_json(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def why_failed(r: dict) -> str:
    if r["rc"] == 124:
        return r["stderr"]
    tail = [l for l in (r["stderr"] or "").strip().splitlines() if l.strip()]
    reason = tail[-1] if tail else "no output"
    if r["rc"] < 0 or r["rc"] > 128:
        reason = f"crashed (signal {-r['rc'] if r['rc'] < 0 else r['rc'] - 128}); " + reason
    return f"exit {r['rc']}: {reason[:300]}"
