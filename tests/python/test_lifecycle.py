"""Lifecycle: holding batches, close()/del with tensors alive, Ctrl-C,
fork (os.fork, multiprocessing) and interpreter exit."""
from __future__ import annotations

import gc
import select
import signal
import subprocess
import sys
import time
import warnings

import pytest
import torch
from torchvision.datasets import ImageFolder

import ringfeed

from conftest import HERE, assert_same_batches, child_env, epoch_batches

BS, SIZE = 16, 64
BATCH_BYTES = BS * 3 * SIZE * SIZE * 4  # float32 NCHW
KW = dict(batch_size=BS, size=SIZE, pipeline="train", threads=2, seed=2)


# --- holding batches ---------------------------------------------------------------------
def test_holding_every_batch(train_dir):
    # Three slabs' worth of budget; the consumer keeps all 26 batches of two
    # epochs. The loader must neither stall nor overwrite what is held.
    loader = ringfeed.Loader(train_dir, **KW, memory_budget=3 * BATCH_BYTES)
    held, at_receipt = [], []
    with pytest.warns(RuntimeWarning, match="copies"):
        for epoch in range(2):
            for images, labels in loader:
                held.append((images, labels))
                at_receipt.append((images.clone(), labels.clone()))
    assert loader.epoch == 2
    assert len(held) == 2 * len(loader) == 26
    assert_same_batches(held, at_receipt, "held batches vs. their values when received")
    assert len({images.data_ptr() for images, _ in held}) == len(held), "two held batches share memory"

    fresh = ringfeed.Loader(train_dir, **KW)  # default budget, nothing held
    want = epoch_batches(fresh) + epoch_batches(fresh)
    assert_same_batches(held, want, "held batches vs. a loader that releases them")
    targets = sorted(ImageFolder(train_dir).targets)
    for epoch in range(2):
        got = torch.cat([labels for _, labels in held[epoch * 13:(epoch + 1) * 13]])
        assert sorted(got.tolist()) == targets, f"epoch {epoch} does not deliver every sample once"
    loader.close()
    assert_same_batches(held, want, "held batches after close()")


def test_releasing_batches_reuses_slabs_without_copies(train_dir):
    loader = ringfeed.Loader(train_dir, **KW, memory_budget=3 * BATCH_BYTES)
    pointers = set()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a consumer holding one batch gets no copies
        for _ in range(2):
            for images, _labels in loader:
                pointers.add(images.data_ptr())
    assert len(pointers) <= 3, f"{len(pointers)} distinct batch buffers under a 3-slab budget"


@pytest.mark.parametrize("how", ["close", "del", "with"])
def test_tensors_outlive_the_loader(train_dir, how):
    loader = ringfeed.Loader(train_dir, **KW)
    it = iter(loader)
    kept = [next(it) for _ in range(3)]  # mid-epoch: threads still running
    copies = [(x.clone(), y.clone()) for x, y in kept]
    if how == "close":
        loader.close()
        loader.close()  # twice is fine
        with pytest.raises(RuntimeError, match="closed"):
            next(it)
        with pytest.raises(RuntimeError, match="closed"):
            iter(loader)
    elif how == "del":
        del loader, it
        gc.collect()
    else:
        with ringfeed.Loader(train_dir, **KW) as other:
            kept += [next(iter(other))]
            copies += [(kept[-1][0].clone(), kept[-1][1].clone())]
        with pytest.raises(RuntimeError, match="closed"):
            len(other)
    assert_same_batches(kept, copies, f"batches after {how}")
    # Churn the allocator: freed slabs reused elsewhere would show up here.
    churn = ringfeed.Loader(train_dir, **{**KW, "seed": 99})
    epoch_batches(churn)
    del churn
    gc.collect()
    assert_same_batches(kept, copies, f"batches after {how} and another loader's epoch")


@pytest.mark.parametrize("iterated", ["never", "one epoch", "left early"])
def test_a_dropped_loader_is_freed_at_once(train_dir, iterated):
    # The last reference gone, the loader closes then, on this thread: not
    # whenever the garbage collector runs, in whatever thread that is (a
    # loader in a cycle with its iterator held threads and pinned memory,
    # and once stopped in a server thread its own reads were waiting on).
    import weakref
    enabled = gc.isenabled()
    gc.disable()
    try:
        loader = ringfeed.Loader(train_dir, **KW)
        if iterated == "one epoch":
            epoch_batches(loader)
        elif iterated == "left early":
            for _ in loader:
                break
            it = iter(loader)
            next(it)
            del it
        alive = weakref.ref(loader)
        del loader
        assert alive() is None, f"a loader {iterated} iterated outlived its last reference"
    finally:
        if enabled:
            gc.enable()


def test_stats_after_an_epoch(train_dir):
    for io in ("auto", "pread"):
        loader = ringfeed.Loader(train_dir, batch_size=32, size=64, threads=2, io=io)
        epoch_batches(loader)
        s = loader.stats()
        for key in ("stages", "bottleneck", "skipped", "backend", "images", "batches", "threads", "seconds"):
            assert key in s, f"stats() has no {key!r}: {sorted(s)}"
        assert s["images"] == 200 and s["batches"] == 7, s
        assert s["skipped"] == [] and s["threads"] == 2
        assert s["backend"] in ("io_uring", "pread") and (io != "pread" or s["backend"] == "pread"), s
        assert s["device"] == "host" and s["batch"] == 32 and s["source"] == train_dir
        assert isinstance(s["stages"], dict) and s["stages"]["decode_s"] > 0


# --- subprocess scenarios ----------------------------------------------------------------
def run_child(mode, source, timeout=120):
    cmd = [sys.executable, str(HERE / "lifecycle_child.py"), mode, source]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=child_env())
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{mode}: hung for {timeout} s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    report = f"{mode}: exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, report
    assert proc.stdout.rstrip().endswith("OK"), report
    for bad in ("Traceback", "Exception ignored", "terminate called", "Fatal Python error", "Segmentation"):
        assert bad not in proc.stderr, report
    return proc


def test_fork_after_iterating(train_dir):
    # Child: the parent's started loader raises RuntimeError, a new Loader
    # runs a full, correct epoch, the parent's held batches are readable.
    # Parent: carries on with its loader, identical batches.
    proc = run_child("fork_started", train_dir)
    assert "child: refused the parent's loader, ran its own epoch, read files" in proc.stdout


def test_fork_before_iterating(train_dir):
    proc = run_child("fork_unstarted", train_dir)
    assert "child: ran the inherited unstarted loader" in proc.stdout


def test_multiprocessing_fork_pool(train_dir):
    # Pool(2) forked while the parent is mid-epoch: workers build their own
    # loaders (correct batches), are refused the parent's, nothing hangs.
    run_child("fork_pool", train_dir)


def test_forked_child_normal_exit(train_dir):
    # The child leaves through sys.exit (atexit, gc of the parent's started
    # loader, held tensors and a loader of its own left mid-epoch).
    proc = run_child("fork_sysexit", train_dir)
    assert "child: atexit ran" in proc.stdout


def thread_state(pid):
    with open(f"/proc/{pid}/task/{pid}/stat") as f:
        stat = f.read()
    return stat[stat.rindex(")") + 2]


def start_and_interrupt(mode, source):
    """Starts lifecycle_child.py MODE, waits for READY and for its main
    thread to block, sends SIGINT. Returns (time.monotonic() of the signal,
    proc, seconds from the signal to the child's exit or None, stdout, stderr)."""
    proc = subprocess.Popen([sys.executable, str(HERE / "lifecycle_child.py"), mode, source],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        deadline = time.monotonic() + 60
        line = ""
        while not line.startswith("READY"):
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                pytest.fail(f"{mode}: no READY within 60 s")
            line = proc.stdout.readline()
            if not line:
                pytest.fail(f"{mode}: exited before READY: {proc.wait()}\n{proc.stderr.read()}")
        # READY is printed right before the first request: wait (polling,
        # with a deadline) until the main thread sleeps in the loader's wait.
        deadline = time.monotonic() + 10
        while thread_state(proc.pid) != "S":
            if proc.poll() is not None:
                pytest.fail(f"{mode}: exited ({proc.returncode}) before blocking\n{proc.stderr.read()}")
            if time.monotonic() > deadline:
                pytest.fail(f"{mode}: the child never blocked")
        signalled = time.monotonic()
        proc.send_signal(signal.SIGINT)
        exited = None
        if mode == "sigint":
            while proc.poll() is None and time.monotonic() - signalled < 10:
                time.sleep(0.002)  # polling the child's exit, with a deadline
            exited = time.monotonic() - signalled if proc.returncode is not None else None
        stdout, stderr = proc.communicate(timeout=60)
        return signalled, proc, exited, stdout, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ctrl_c_interrupts_a_blocked_iteration(big_dataset):
    signalled, proc, latency, stdout, stderr = start_and_interrupt("sigint", big_dataset)
    raised = [float(l.split()[1]) - signalled for l in stderr.splitlines() if l.startswith("KEYBOARDINTERRUPT_AT ")]
    print(f"SIGINT to KeyboardInterrupt: {[round(r, 4) for r in raised]} s; to exit: "
          f"{latency if latency is None else round(latency, 3)} s")
    report = f"exit {proc.returncode}, latency {latency}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    assert latency is not None, "the child did not exit within 10 s of SIGINT\n" + report
    assert "KeyboardInterrupt" in stderr, report
    assert "GOT" not in stdout, "the signal arrived after the first batch: the child was not blocked\n" + report
    assert "core.next(" in stderr, "KeyboardInterrupt was not raised from the loader's wait\n" + report
    assert proc.returncode in (-signal.SIGINT, 1, 130), report
    assert len(raised) == 1 and raised[0] <= 0.5, f"KeyboardInterrupt {raised} s after SIGINT (promise: 0.5 s)\n" + report
    assert latency <= 1.5, f"{latency:.3f} s from SIGINT to exit (promise: 0.5 s)\n" + report


def test_ctrl_c_caught_then_continue(big_dataset):
    # After a caught KeyboardInterrupt the same iterator continues: the
    # interrupted batch is delivered next and the epoch is complete and unchanged.
    import json
    _, proc, _, stdout, stderr = start_and_interrupt("sigint_resume", big_dataset)
    report = f"exit {proc.returncode}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    assert proc.returncode == 0, report
    result = json.loads(next(l for l in stdout.splitlines() if l.startswith("RESULT "))[len("RESULT "):])
    assert len(result["interrupted"]) == 1, report
    interrupted = result["interrupted"][0]
    assert "core.next(" in interrupted["frame"], report
    assert interrupted["next_batch"] == interrupted["taken"] == 0, report
    assert result["batches"] == result["expected_batches"] == 4, report
    assert result["same"], "the epoch after a caught KeyboardInterrupt differs from an uninterrupted one\n" + report


def test_ctrl_c_that_lands_with_its_batch_loses_nothing(train_dir):
    # 12 of 20 epochs lost a batch before next() looked for a signal once
    # its batch had landed (the KeyboardInterrupt went out with the result).
    import json
    proc = run_child("sigint_with_the_batch", train_dir)
    result = json.loads(next(l for l in proc.stdout.splitlines() if l.startswith("RESULT "))[len("RESULT "):])
    assert result["interrupts"] == 20, proc.stdout
    assert result["lost"] == [], f"epochs that lost a batch to Ctrl-C: {result['lost']}"


def test_close_refused_from_another_thread_leaves_the_loader_whole(big_dataset):
    # close() while the consumer waits in next() is refused (one consumer);
    # it used to drop the loader all the same, so every later call said
    # "ringfeed.Loader is closed".
    import linecache
    import threading
    loader = ringfeed.Loader(big_dataset, batch_size=8, pipeline="train", exact=True, output="uint8", threads=1)
    it = iter(loader)
    got = []
    consumer = threading.Thread(target=lambda: got.append(next(it)))
    consumer.start()
    deadline = time.monotonic() + 60
    while True:  # until the consumer's innermost frame is the call into C++ (its GIL given up there)
        frame = sys._current_frames().get(consumer.ident)
        if frame is not None and "core.next(" in linecache.getline(frame.f_code.co_filename, frame.f_lineno):
            break
        assert consumer.is_alive() and time.monotonic() < deadline, "the consumer never waited in next()"
    with pytest.raises(RuntimeError, match="two threads at once"):
        loader.close()
    consumer.join()
    assert len(got) == 1
    assert next(it)[0].shape[0] == 8  # the loader still works
    loader.close()
