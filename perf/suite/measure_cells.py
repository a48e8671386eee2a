"""One measurement of each kind perf/run takes (suite_measure.py runs them):
fio, `ringfeed bench`, the DataLoader and ringfeed.Loader (each in a
subprocess of suite_measure.py, inside the cgroup) and the bare-decode
limit; and the steady state every loader cell reports."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from measure_host import last_json, runner, why_failed

# The loader subprocesses: `suite_measure.py dataloader|pyloader ...`.
SUITE_MEASURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "suite_measure.py")
BATCH = 64
# Warm-up batches left out of every loader's steady state (the same for
# every contender): ringfeed's batch buffers at batch 64 (8: each one's pages
# are touched for the first time once), at most half a run's batches.
WARMUP_BATCHES = 8
# A steady state needs a window: at least this share of the run after the warm-up.
STEADY_MIN_SHARE = 0.25


def warmup_batches(files: int) -> int:
    return max(1, min(WARMUP_BATCHES, -(-files // BATCH) // 2))


def shuffle_buffer(samples: int) -> int | None:
    """--stream's shuffle buffer: bench's 1000 samples, or a quarter of a
    smaller dataset. The first batch waits for the buffer to fill; were it
    the whole dataset, every read would be start-up and the steady state a
    decode from memory."""
    return None if samples >= 4000 else max(1, samples // 4)


_warmup_flag: dict[str, bool] = {}


def warmup_supported(binary: str) -> bool:
    """Whether this `ringfeed bench` takes --warmup-batches (older builds: no)."""
    if binary not in _warmup_flag:
        r = subprocess.run([binary, "bench", "--help"], capture_output=True, text=True)
        _warmup_flag[binary] = "--warmup-batches" in r.stdout
    return _warmup_flag[binary]


def fio_once(run: runner, d: str, loops: int, runtime: int) -> dict:
    cmd = ["fio", "--name=r", f"--opendir={d}", "--rw=read", "--bs=16k", "--direct=1", "--ioengine=io_uring",
           "--iodepth=32", "--file_service_type=random", f"--loops={loops}", f"--runtime={runtime}",
           "--output-format=json"]
    r = run.run(cmd)
    m = {"command": " ".join(cmd), "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
         "other_load_cores": r["other_load_cores"]}
    text = r["stdout"]
    j = None
    if "{" in text:  # fio prints "fio: opendir added N files" before the JSON
        try:
            j = json.loads(text[text.index("{"):])
        except json.JSONDecodeError:
            j = None
    if r["rc"] != 0 or j is None:
        return {**m, "status": "failed", "reason": why_failed(r)}
    rd = j["jobs"][0]["read"]
    secs = rd["runtime"] / 1000.0
    return {**m, "status": "ok", "mb_per_s": rd["bw_bytes"] / 1e6, "iops": rd["iops"], "bytes": rd["io_bytes"],
            "seconds": secs, "fio_version": j.get("fio version")}


def steady_cell(j: dict, run_rate: float | None, startup: float | None) -> dict:
    """A loader cell's rates from its JSON: images_per_s is the steady state
    (after the warm-up batches: what a training run sees), run_images_per_s
    the whole short run with its start-up, startup_s the start-up alone
    (opening the loader or scanning the dataset, and the first batch). A
    program that reports no steady state keeps its whole-run rate (steady
    false)."""
    steady = j.get("steady_images_per_s")
    window, whole = j.get("steady_seconds"), j.get("seconds")
    if (isinstance(window, (int, float)) and isinstance(whole, (int, float)) and whole > 0
            and window < STEADY_MIN_SHARE * whole):
        # The rest was decoded before the warm-up ended (a dataset smaller than
        # the prefetch, or read whole by --stream): no steady state to see.
        return {"images_per_s": run_rate, "run_images_per_s": run_rate, "startup_s": startup, "steady": False,
                "steady_note": f"steady window {window:.3f} s of a {whole:.2f} s run: whole-run rate"}
    if isinstance(steady, (int, float)) and steady == steady:  # not None, not NaN
        return {"images_per_s": steady, "run_images_per_s": run_rate, "startup_s": startup, "steady": True,
                "warmup_batches": j.get("warmup_batches"), "first_batch_s": j.get("first_batch_s"),
                "steady_seconds": window}
    return {"images_per_s": run_rate, "run_images_per_s": run_rate, "startup_s": startup, "steady": False}


def startup_of(j: dict) -> float | None:
    if not isinstance(j.get("first_batch_s"), (int, float)):
        return None
    return (j.get("open_s") or 0.0) + j["first_batch_s"]


def ringfeed_once(run: runner, binary: str, src: str, pipeline: str, direct: bool, epochs: int,
                  direct_supported: bool, stream: bool = False, warmup: int | None = None,
                  shuffle_buffer: int | None = None) -> dict:
    cmd = [binary, "bench", src, "--pipeline", pipeline, "--json", "--epochs", str(epochs)]
    if pipeline != "none":
        cmd += ["--batch", str(BATCH), "--device", "-1"]
        if warmup is not None and warmup_supported(binary):
            cmd += ["--warmup-batches", str(warmup)]
    if stream:
        cmd.append("--stream")  # tar shards read front to back, shuffle buffer (WebDataset's recipe)
        if shuffle_buffer:
            cmd += ["--shuffle-buffer", str(shuffle_buffer)]
    if direct:
        cmd.append("--direct")
    m = {"command": " ".join(cmd)}
    if direct and not direct_supported:
        return {**m, "status": "n/a", "reason": "n/a: flag missing (`ringfeed bench --help` has no --direct)"}
    r = run.run(cmd)
    m.update(wall_s=r["wall_s"], cpu_s=r["cpu_s"], other_load_cores=r["other_load_cores"])
    j = last_json(r["stdout"])
    if r["rc"] != 0 or j is None:
        reason = why_failed(r)
        if direct and ("--direct" in r["stderr"] and "not expected" in r["stderr"]):
            return {**m, "status": "n/a", "reason": "n/a: flag missing (" + reason + ")"}
        return {**m, "status": "failed", "reason": reason}
    skipped = j.get("skipped") or []
    out = {**m, "status": "ok", "images": j.get("images", 0), "seconds": j.get("seconds"),
           "wall_images_per_s": j.get("images", 0) / r["wall_s"] if r["wall_s"] > 0 else None,
           "images_per_s": j.get("images_per_s"), "mb_per_s": j.get("mb_per_s"), "bytes": j.get("bytes"),
           "backend": j.get("backend"), "direct": j.get("direct"), "bottleneck": j.get("bottleneck"),
           "threads": j.get("threads"), "io_depth": j.get("io_depth"), "stages": j.get("stages"),
           "mode": j.get("mode"), "skipped": len(skipped)}
    if pipeline != "none":
        out.update(steady_cell(j, j.get("images_per_s"), startup_of(j)))
    if skipped:
        out["skipped_example"] = f"{skipped[0].get('path')}: {skipped[0].get('reason')}"
    if not j.get("images"):
        out["status"] = "failed"
        out["reason"] = f"no image delivered ({len(skipped)} skipped, e.g. {out.get('skipped_example', '?')})"
    return out


def dataloader_once(run: runner, src: str, pipeline: str, workers: int, data_bytes: int,
                    draft: bool = False, warmup: int = 1) -> dict:
    cmd = [sys.executable, SUITE_MEASURE, "dataloader", src, "--pipeline", pipeline,
           "--workers", str(workers), "--batch", str(BATCH), "--warmup", str(warmup)] + (["--draft"] if draft else [])
    r = run.run(cmd)
    m = {"command": " ".join(cmd), "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
         "other_load_cores": r["other_load_cores"]}
    j = last_json(r["stdout"])
    if j is None or r["rc"] != 0:
        return {**m, "status": "failed", "reason": why_failed(r)}
    if j.get("status") == "n/a":
        return {**m, **j}
    return {**m, "status": "ok", **j, "bytes": data_bytes, "mb_per_s": data_bytes / 1e6 / j["seconds"],
            **steady_cell(j, j["images_per_s"], startup_of(j))}


def pyloader_once(run: runner, src: str, pipeline: str, threads: int, data_bytes: int,
                  python_path: str | None, warmup: int = 1) -> dict:
    cmd = [sys.executable, SUITE_MEASURE, "pyloader", src, "--pipeline", pipeline,
           "--threads", str(threads), "--batch", str(BATCH), "--warmup", str(warmup)]
    m = {"command": " ".join(cmd)}
    if not python_path:
        return {**m, "status": "n/a", "reason": "n/a: no ringfeed Python module built (ringfeed_python)"}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (python_path, env.get("PYTHONPATH")) if p)
    r = run.run(cmd, env=env)
    m.update(command=f"PYTHONPATH={python_path} " + m["command"], wall_s=r["wall_s"], cpu_s=r["cpu_s"],
             other_load_cores=r["other_load_cores"])
    j = last_json(r["stdout"])
    if j is None or r["rc"] != 0:
        return {**m, "status": "failed", "reason": why_failed(r)}
    if j.get("status") == "n/a":
        return {**m, **j}
    return {**m, "status": "ok", "images": j["images"], "seconds": j["seconds"],
            "steady_images_per_s": j.get("steady_images_per_s"),
            "bottleneck": j.get("bottleneck"), "backend": j.get("backend"), "threads": j.get("threads"),
            "module": j.get("module"), "bytes": data_bytes, "mb_per_s": data_bytes / 1e6 / j["seconds"],
            **steady_cell(j, j["images"] / j["seconds"], startup_of(j))}


def decode_limit_once(run: runner, program: str, src: str, threads: int, seconds: float) -> dict:
    cmd = [program, src, "--threads", str(threads), "--seconds", str(seconds)]
    r = run.run(cmd)
    m = {"command": " ".join(cmd), "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
         "other_load_cores": r["other_load_cores"]}
    j = last_json(r["stdout"])
    if j is None or r["rc"] != 0:
        return {**m, "status": "failed", "reason": why_failed(r)}
    return {**m, "status": "ok", "images": j["images"], "seconds": j["seconds"], "images_per_s": j["images_per_s"],
            "threads": j["threads"], "cpu_cores": j["cpu_cores"], "files": j["files"],
            "megapixels_per_image": j["megapixels_per_image"], "startup_s": j.get("load_s"), "steady": True,
            "mb_per_s": j["bytes"] / j["files"] * j["images_per_s"] / 1e6 if j["files"] else None}
