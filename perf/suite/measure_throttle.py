"""What a profile's device throttle lets through (suite_measure.py's
throttle check): fio inside the blkio cgroup and outside it."""
from __future__ import annotations

import json
import os

from measure_host import drop_caches, runner, why_failed


def throttle_check(run: runner, plain: runner, device: str, big_file: str) -> dict:
    """Measures what the throttle lets through, with fio on one big file of
    the profile's file system (a shard: real data, where the sparse loop
    image's holes would read as free zeros), inside the cgroup and outside:
      seq_1m_libaio   1 MiB sequential O_DIRECT reads, libaio, depth 4: the
                      bandwidth limit (or IOPS × 512 KiB: the loop device
                      splits larger requests and blk-throttle counts each part)
      seq_1m_uring    the same through io_uring (fio's and ringfeed's engine):
                      is it throttled alike? (On the raw loop device this
                      kernel gives io_uring half the libaio bandwidth: a
                      REQ_NOWAIT request that must be split is charged,
                      refused with EAGAIN and re-issued from an io-wq worker.)
      rand_16k        16 KiB random O_DIRECT reads, io_uring, depth 32: the
                      IOPS limit
      buffered        cold buffered sequential passes over ~256 MB (fio drops
                      the file's cache before each): are page-cache reads
                      throttled too (they are when the reading task issues
                      them, as readahead does)?
    Timed runs skip their first second (the throttle lets a burst through)."""
    def fio(r: runner, name: str, args: list[str], timed: bool = True) -> dict:
        cmd = ["fio", f"--name={name}", f"--filename={big_file}", "--readonly", "--output-format=json"] + args
        if timed:
            cmd += ["--time_based", "--ramp_time=1", "--runtime=2"] if r.cgroup else ["--time_based", "--runtime=1"]
        res = r.run(cmd)
        try:
            rd = json.loads(res["stdout"][res["stdout"].index("{"):])["jobs"][0]["read"]
            return {"mb_per_s": rd["bw_bytes"] / 1e6, "iops": rd["iops"]}
        except (ValueError, KeyError, IndexError, json.JSONDecodeError):
            return {"error": why_failed(res)}

    seq = ["--direct=1", "--rw=read", "--bs=1m", "--iodepth=4"]
    rand = ["--direct=1", "--rw=randread", "--bs=16k", "--iodepth=32", "--ioengine=io_uring"]
    loops = max(1, (256 << 20) // max(os.path.getsize(big_file), 1))
    buffered = ["--direct=0", "--rw=read", "--bs=1m", "--invalidate=1", "--ioengine=psync", f"--loops={loops}"]
    out = {"device": device, "file": big_file, "file_bytes": os.path.getsize(big_file)}
    for label, r in (("", run), ("_unthrottled", plain)):
        out["seq_1m_libaio" + label] = fio(r, "seq", seq + ["--ioengine=libaio"])
        out["seq_1m_uring" + label] = fio(r, "seq", seq + ["--ioengine=io_uring"])
        out["rand_16k" + label] = fio(r, "rand", rand)
        drop_caches()
        out["buffered" + label] = fio(r, "buffered", buffered, timed=False)
    return out


def throttle_summary(t: dict) -> str:
    g = lambda k, f: t.get(k, {}).get(f, float("nan"))  # noqa: E731
    return (f"1 MiB O_DIRECT reads {g('seq_1m_libaio', 'mb_per_s'):.0f} MB/s with libaio, "
            f"{g('seq_1m_uring', 'mb_per_s'):.0f} MB/s with io_uring (unthrottled "
            f"{g('seq_1m_libaio_unthrottled', 'mb_per_s'):.0f}); 16 KiB random reads "
            f"{g('rand_16k', 'iops'):.0f} IOPS (unthrottled {g('rand_16k_unthrottled', 'iops'):.0f}); "
            f"buffered cold sequential read {g('buffered', 'mb_per_s'):.0f} MB/s (unthrottled "
            f"{g('buffered_unthrottled', 'mb_per_s'):.0f})")
