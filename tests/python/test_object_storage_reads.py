"""How https:// and s3:// sources read their bytes, against servers the tests
start on 127.0.0.1 (tests/support/object_store.py; the servers are
conftest.py's fixtures, shared with test_object_storage.py): a body cut
short is resumed from its first missing byte, streamed shards are read in
parts and ahead of the decoders, Ctrl-C and close() end stalled reads at
once, and HTTP/2 is used where the server offers it.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import ringfeed

from conftest import OBJECT_KW as KW
from conftest import REPO, assert_same_batches, brace, cli_path, epoch_batches, shard_names

sys.path.insert(0, str(REPO / "tests" / "support"))
object_store = pytest.importorskip("object_store", reason="tests/support/object_store.py (the servers harness)")


def _range_of(entry):
    first, last = entry["range"].removeprefix("bytes=").split("-")
    return int(first), int(last)


@pytest.mark.parametrize("kind,params", [("truncate", {"after_bytes": 700}),
                                         ("reset", {"after_bytes": 700}),
                                         ("stall", {"after_bytes": 700, "delay_s": 15})])
def test_https_cut_body_resumes_from_the_last_byte(trust, tls_server, shards, kind, params):
    # A body cut short (closed, reset, or stalled past the low-speed limit
    # of 1 KiB/s for 10 s) is asked for again from the first byte missing,
    # not from the start. The first sample read is a range of one shard.
    names = shard_names(shards)
    want = epoch_batches(ringfeed.Loader(str(shards / names[0]), **KW))
    with object_store.FaultProxy(tls_server.url, upstream_ca_file=tls_server.ca_file) as proxy:
        loader = ringfeed.Loader(f"{proxy.url}/shards/{names[0]}", **KW)  # indexed
        proxy.clear()
        proxy.add_fault(kind, count=1, method="GET", **params)
        got = epoch_batches(loader)
        log = proxy.log()
    assert_same_batches(got, want, f"after a {kind}")
    cut = [e for e in log if e.get("fault")]
    assert len(cut) == 1, log
    first, last = _range_of(cut[0])
    assert last - first + 1 > 700, "the fault must cut a body longer than what it lets through"
    # The retry asks for what was not received, up to the range's end: after
    # a clean close or a stall, exactly the bytes after the 700 sent; after a
    # reset, the kernel may drop what it had not handed over yet, so it
    # starts somewhere in [first, first + 700] (never past a byte missing).
    resumed = [e for e in log if not e.get("fault") and e.get("range")
               and first <= _range_of(e)[0] <= first + 700 and _range_of(e)[1] == last]
    assert resumed, f"no retry of bytes [{first}, {last}]: {log}"
    if kind != "reset":  # (the loader may also read the range afresh for the next epoch)
        assert any(_range_of(e)[0] == first + 700 for e in resumed), resumed


def test_s3_streamed_parts_are_read_ahead(s3_env, shards):
    # stream_shards reads the next parts while the decoders work on the
    # last: with every part's first byte held back 0.5 s, later parts are
    # asked for while earlier ones wait. (One part at a time, as before,
    # never overlaps: each request waited for the answer before it.)
    names = shard_names(shards)
    kw = dict(KW, stream_shards=True)
    with object_store.FaultProxy(s3_env.endpoint) as proxy:
        os.environ["AWS_ENDPOINT_URL"] = proxy.url
        loader = ringfeed.Loader(f"s3://data/shards/{brace(names)}", **kw)  # indexes the shards
        proxy.clear()
        proxy.add_fault("slow_first_byte", count=1000, path="shard-", method="GET", delay_s=0.5)
        got = epoch_batches(loader)
        parts = [e for e in proxy.log() if e["method"] == "GET" and "shard-" in e["path"]]
    want = epoch_batches(ringfeed.Loader(str(shards / brace(names)), **kw))
    assert_same_batches(got, want, "read-ahead s3 shards")
    assert len(parts) >= 2, parts
    assert max(e["overlapping"] for e in parts) >= 1, f"one part at a time: {parts}"


def test_s3_shards_streamed_in_parts(s3_env, shards):
    # stream_shards: each shard read front to back in ranged GETs of 8 MiB
    # parts (one part per shard here, 1 MiB shards), never a request per
    # sample. Counted per request, not in total: the reader runs ahead into
    # later epochs as far as its buffer allows, more so on a busy machine.
    names = shard_names(shards)
    kw = dict(KW, stream_shards=True)
    part = 8 << 20  # the object store default of stream_read_size
    sizes = {name: (shards / name).stat().st_size for name in names}
    with object_store.FaultProxy(s3_env.endpoint) as proxy:
        os.environ["AWS_ENDPOINT_URL"] = proxy.url
        loader = ringfeed.Loader(f"s3://data/shards/{brace(names)}", **kw)
        indexing = len(proxy.log())  # the size probes and index reads, all before the first batch
        got = epoch_batches(loader)
        loader.close()
        reads = [e for e in proxy.log()[indexing:] if e["method"] == "GET"]
    want = epoch_batches(ringfeed.Loader(str(shards / brace(names)), **kw))
    assert_same_batches(got, want, "streamed s3 shards")
    assert {e["path"].rsplit("/", 1)[1] for e in reads} == set(names), "a shard was not read"
    for e in reads:
        name = e["path"].rsplit("/", 1)[1]
        start, end = (int(x) for x in e["range"].removeprefix("bytes=").split("-"))
        # A part, or (a shard smaller than that) at least half the shard:
        # about ten samples of it, never one.
        assert end + 1 - start >= min(part, sizes[name] // 2), \
            f"{name}: {e['range']} is not a part of the shard ({sizes[name]} bytes) but a sample"


def _sigint_during_stall(s3_env, command, armed=lambda log: True, ready=None):
    """Runs `command` against s3rver through a fault proxy; once it printed
    the line `ready` (if given) and `armed(proxy log)` holds, makes every
    shard GET stall (100 bytes, then nothing for 60 s, past the low-speed
    limit), waits for a stalled read, sends SIGINT: (status, stderr, seconds
    from SIGINT to exit, stdout)."""
    from conftest import child_env
    with object_store.FaultProxy(s3_env.endpoint) as proxy:
        status, err, took, out = _interrupt(proxy, command, child_env(AWS_ENDPOINT_URL=proxy.url), armed, ready)
    print(f"SIGINT to exit: {took:.2f} s; stderr: {err.strip()}")
    return status, err, took, out


def _interrupt(proxy, command, env, armed, ready):
    import signal
    import time
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        if ready is not None:
            assert proc.stdout.readline().strip() == ready, proc.stderr.read()
        deadline = time.monotonic() + 60
        stalled = False
        while not any(e.get("fault") == "stall" for e in proxy.log()):  # polling, with a deadline
            assert proc.poll() is None, f"exited ({proc.returncode}) before a read stalled: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "no read reached the stall within 60 s"
            if not stalled and armed(proxy.log()):
                proxy.add_fault("stall", count=100000, path="shard-", method="GET", after_bytes=100, delay_s=60)
                stalled = True
            time.sleep(0.02)
        signalled = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        return proc.returncode, err, time.monotonic() - signalled, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_ctrl_c_while_indexing_stalls(s3_env, shards):
    # SIGINT while the loader is still being opened (the shards' headers
    # read to index them) and that read stalls: the open is stopped (its
    # reads cancelled), exit status 130, saying so, at once: not the grace
    # period's forced exit (10 s), which it needed before.
    names = shard_names(shards)
    status, err, took, _ = _sigint_during_stall(
        s3_env, [cli_path(), "bench", f"s3://data/shards/{brace(names)}", "--pipeline", "val"])
    assert status == 130, (status, err)
    assert "interrupted by SIGINT while opening" in err, err
    assert took < 5, f"{took:.1f} s from SIGINT to exit: {err}"


def test_cli_ctrl_c_during_a_stalled_read_stops_at_once(s3_env, shards):
    # SIGINT while a batch waits on a read that stalls mid-run: the wait
    # ends, the reads in flight are cancelled, the command stops cleanly
    # ("interrupted by SIGINT after N images", 130) at once, well inside
    # the grace period it needed before.
    names = shard_names(shards)
    # Indexing takes a size probe and one read per shard; armed after
    # twice that many GETs, the stall hits the run's sample reads.
    status, err, took, _ = _sigint_during_stall(
        s3_env, [cli_path(), "bench", f"s3://data/shards/{brace(names)}", "--pipeline", "val", "--epochs", "1000"],
        armed=lambda log: sum(e["method"] == "GET" for e in log) > 4 * len(names))
    assert status == 130, (status, err)
    assert "interrupted by SIGINT" in err, err
    assert "exiting now" not in err, f"stopped by the grace period, not by the interrupt: {err}"
    assert took < 5, f"{took:.1f} s from SIGINT to exit: {err}"


def test_python_ctrl_c_while_opening_a_stalled_source(s3_env, shards):
    # KeyboardInterrupt while ringfeed.Loader(...) is still indexing shards
    # whose reads stall: raised at once (the open's reads cancelled), not
    # after the 30 s deadline of each read.
    names = shard_names(shards)
    code = ("import sys, ringfeed\n"
            "try:\n"
            "    ringfeed.Loader(sys.argv[1], batch_size=8, device='cpu')\n"
            "except KeyboardInterrupt:\n"
            "    print('KeyboardInterrupt', file=sys.stderr)\n"
            "    sys.exit(3)\n")
    status, err, took, _ = _sigint_during_stall(s3_env, [sys.executable, "-c", code, f"s3://data/shards/{brace(names)}"])
    assert status == 3, (status, err)
    assert "KeyboardInterrupt" in err, err
    assert took < 5, f"{took:.1f} s from SIGINT to KeyboardInterrupt: {err}"


def test_closing_a_streaming_loader_stalled_on_its_server_is_prompt(s3_env, shards):
    # stream_shards: a batch waits on parts that stall; after Ctrl-C,
    # close() must not wait out the stall: the reads in flight are
    # cancelled, and so are those the stream's read-ahead starts after the
    # cancel (before, it went on to the next parts, which stalled again).
    names = shard_names(shards)
    code = ("import sys, time, ringfeed\n"
            "l = ringfeed.Loader(sys.argv[1], batch_size=8, pipeline='val', threads=2, device='cpu',\n"
            "                    stream_shards=True, io_depth=8)\n"
            "print('opened', flush=True)\n"
            "try:\n"
            "    next(iter(l))\n"
            "    print('not stalled', flush=True)\n"
            "except KeyboardInterrupt:\n"
            "    t = time.monotonic()\n"
            "    l.close()\n"
            "    print(f'closed in {time.monotonic() - t:.3f} s', flush=True)\n")
    _, err, _, out = _sigint_during_stall(s3_env, [sys.executable, "-c", code, f"s3://data/shards/{brace(names)}"],
                                          ready="opened")
    print(out, err)
    closed = [line for line in out.splitlines() if line.startswith("closed in")]
    assert closed, (out, err)
    assert float(closed[0].split()[2]) < 5, f"close() took {closed[0]}: it waited for the stalled server"


def test_https_over_http2(monkeypatch, tmp_path, shards):
    # HTTP/2 where the server offers it: every request of an epoch over
    # https:// shards comes in as HTTP/2 (ALPN; the server would also take
    # HTTP/1.1 and logs which), and the batches equal the local shards'.
    import h2_server
    names = shard_names(shards)
    try:
        server = h2_server.Http2Server(shards.parent, tmp_path / "tls").start()
    except object_store.Unavailable as e:
        pytest.skip(str(e))
    try:
        monkeypatch.setenv("CURL_CA_BUNDLE", server.ca_file)
        got = epoch_batches(ringfeed.Loader(f"{server.url}/shards/{brace(names)}", **KW))
        log = server.log()
    finally:
        server.stop()
    assert_same_batches(got, epoch_batches(ringfeed.Loader(str(shards / brace(names)), **KW)), "https:// over h2")
    reads = [e for e in log if "shard-" in e["path"]]
    assert reads and {e["version"] for e in reads} == {"2.0"}, log
