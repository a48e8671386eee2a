"""Scenarios of test_lifecycle.py that need a process of their own (Ctrl-C,
fork, interpreter exit). Not a test module: run as

    python lifecycle_child.py MODE SOURCE

It prints what the test checks ("READY", "RESULT {json}", "OK") and exits 0
when every check inside passed. Children of fork() touch tensors only
through numpy (no torch kernels: a forked child must not rely on the
parent's OpenMP pool), and are always reaped with a deadline.
"""
import atexit
import hashlib
import json
import multiprocessing
import os
import signal
import sys
import time
import traceback

import ringfeed

KW = dict(batch_size=32, pipeline="train", size=64, output="uint8", threads=2, seed=3)
CHILD_TIMEOUT = 60.0
KEEP = []  # objects left alive until interpreter exit


def digest(batch):
    images, labels = batch
    return labels.tolist(), hashlib.sha1(images.numpy().tobytes()).hexdigest()


def epoch_digest(loader):
    return [digest(b) for b in loader]


def reference_epochs(source, epochs=1, **kw):
    with ringfeed.Loader(source, **{**KW, **kw}) as loader:
        return [epoch_digest(loader) for _ in range(epochs)]


def fork():
    sys.stdout.flush()
    sys.stderr.flush()
    return os.fork()


def wait_child(pid, timeout=CHILD_TIMEOUT):
    """Exit code of child `pid`; kills it and fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"forked child {pid} did not exit within {timeout} s (killed)")
        time.sleep(0.02)  # polling a child's exit with a deadline


def child_block(body):
    """Runs body() in a forked child and leaves with os._exit: 0 if it passed."""
    code = 1
    try:
        body()
        code = 0
    except BaseException:  # report everything, never return into the parent's code
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def expect_refusal(loader, it):
    """The parent's started loader refuses to run in a child, saying why."""
    for what, attempt in (("next(it)", lambda: next(it)), ("for", lambda: [None for _ in loader])):
        try:
            attempt()
        except RuntimeError as e:
            assert "fork" in str(e), f"{what}: RuntimeError without saying why: {e}"
        else:
            raise AssertionError(f"{what}: the parent's started loader ran in a forked child")


# --- fork ----------------------------------------------------------------------------------
def fork_started(source):
    ref0, ref1 = reference_epochs(source, epochs=2)
    loader = ringfeed.Loader(source, **KW)
    it = iter(loader)
    held = [next(it), next(it)]
    held_bytes = [(x.numpy().tobytes(), y.numpy().tobytes()) for x, y in held]
    files = ringfeed.ImageFolder(source).samples[:8]
    contents = [bytes(v) for v in ringfeed.read_files([p for p, _ in files])]  # read_files' threads start here

    def child():
        expect_refusal(loader, it)
        # read_files, whose threads the parent started, works in the child
        assert [bytes(v) for v in ringfeed.read_files([p for p, _ in files])] == contents, "read_files in the child"
        for (x, y), (xb, yb) in zip(held, held_bytes):  # the parent's batches stay readable
            assert x.numpy().tobytes() == xb and y.numpy().tobytes() == yb, "a held batch changed in the child"
        mine = ringfeed.Loader(source, **KW)
        assert epoch_digest(mine) == ref0, "a new Loader in the child gave other batches"
        mine.close()
        print("child: refused the parent's loader, ran its own epoch, read files", flush=True)

    pid = fork()
    if pid == 0:
        child_block(child)
    rest = [digest(b) for b in it]  # the parent carries on
    assert [digest(b) for b in held] + rest == ref0, "the parent's epoch changed after fork"
    assert epoch_digest(loader) == ref1, "the parent's next epoch changed after fork"
    code = wait_child(pid)
    assert code == 0, f"child exited {code}"
    for (x, y), (xb, yb) in zip(held, held_bytes):
        assert x.numpy().tobytes() == xb and y.numpy().tobytes() == yb
    KEEP.extend([loader, held])  # exit with a started loader and held tensors


def fork_unstarted(source):
    ref0, ref1 = reference_epochs(source, epochs=2)
    loader = ringfeed.Loader(source, **KW)  # no thread yet

    def child():
        assert epoch_digest(loader) == ref0, "the inherited unstarted loader gave other batches"
        assert epoch_digest(loader) == ref1
        print("child: ran the inherited unstarted loader", flush=True)

    pid = fork()
    if pid == 0:
        child_block(child)
    assert epoch_digest(loader) == ref0, "the parent's loader gave other batches after fork"
    code = wait_child(pid)
    assert code == 0, f"child exited {code}"


PARENT_LOADER = None


def pool_new_loader(seed):
    with ringfeed.Loader(SOURCE, **{**KW, "seed": seed}) as loader:
        return epoch_digest(loader)


def pool_parent_loader(_):
    try:
        for _ in PARENT_LOADER:
            break
    except RuntimeError as e:
        return "refused: " + str(e)
    return "ran"


def fork_pool(source):
    global PARENT_LOADER
    ref3, = reference_epochs(source, seed=3)
    ref4, = reference_epochs(source, seed=4)
    loader = PARENT_LOADER = ringfeed.Loader(source, **KW)
    it = iter(loader)
    held = next(it)
    ctx = multiprocessing.get_context("fork")
    pool = ctx.Pool(2)
    try:
        results = pool.map_async(pool_new_loader, [3, 4, 3, 4]).get(timeout=CHILD_TIMEOUT)
        refusals = pool.map_async(pool_parent_loader, range(2)).get(timeout=CHILD_TIMEOUT)
    finally:
        pool.terminate()
        pool.join()
    assert results == [ref3, ref4, ref3, ref4], "Loaders made in Pool workers gave other batches"
    assert all(r.startswith("refused: ") and "fork" in r for r in refusals), refusals
    assert [digest(held)] + [digest(b) for b in it] == ref3, "the parent's epoch changed around the Pool"


def fork_sysexit(source):
    ref0, = reference_epochs(source)
    loader = ringfeed.Loader(source, **KW)
    it = iter(loader)
    held = [next(it), next(it)]
    pid = fork()
    if pid == 0:
        # The child leaves through the interpreter's normal exit: atexit
        # handlers, module teardown and gc free the parent's started loader,
        # its held batches and a loader of its own, left mid-epoch.
        atexit.register(lambda: print("child: atexit ran", flush=True))
        mine = ringfeed.Loader(source, **KW)
        for i, _ in enumerate(mine):
            if i == 2:
                break
        KEEP.extend([loader, it, held, mine])
        sys.exit(0)
    rest = [digest(b) for b in it]
    assert [digest(b) for b in held] + rest == ref0
    code = wait_child(pid)
    assert code == 0, f"child exited {code}"
    KEEP.extend([loader, held])


# --- Ctrl-C -----------------------------------------------------------------------------
# SOURCE holds a few large JPEGs: in exact mode with one decode thread a batch
# takes a good part of a second, and the first batch of a new loader cannot
# have been prefetched (threads start on the first request). READY is printed
# right before that request; the parent waits until this thread sleeps (in
# the loader's wait) before it sends SIGINT. io_depth=2 keeps what is in
# flight, and so the teardown after the interrupt, to two samples: close()
# lets samples already being read finish their decode.
def slow_loader(source, batch_size):
    return ringfeed.Loader(source, batch_size=batch_size, pipeline="train", exact=True, output="uint8",
                           threads=1, io_depth=2, seed=1)


def sigint(source):
    loader = slow_loader(source, 8)
    print(f"READY {os.getpid()}", flush=True)
    try:
        for epoch in range(1000):
            for number, (images, labels) in enumerate(loader):
                print(f"GOT epoch {epoch} batch {number}", flush=True)
    except KeyboardInterrupt:
        print(f"KEYBOARDINTERRUPT_AT {time.monotonic():.6f}", file=sys.stderr, flush=True)
        raise  # exit through the interpreter, the loader torn down by gc
    raise AssertionError("not interrupted")


def sigint_resume(source):
    # KeyboardInterrupt caught: the same iterator continues with the batch
    # that was interrupted, and the epoch is complete and unchanged.
    loader = slow_loader(source, 4)
    it = iter(loader)
    got = []
    interrupted = []
    print(f"READY {os.getpid()}", flush=True)
    while True:
        try:
            for b in it:
                got.append(digest(b))
            break
        except KeyboardInterrupt as e:
            interrupted.append({"frame": traceback.extract_tb(e.__traceback__)[-1].line,
                                "next_batch": loader.state_dict()["next_batch"], "taken": len(got)})
    with ringfeed.Loader(source, batch_size=4, pipeline="train", exact=True, output="uint8", threads=2,
                         seed=1) as fresh:
        ref = epoch_digest(fresh)
    print("RESULT " + json.dumps({"interrupted": interrupted, "same": got == ref, "batches": len(got),
                                  "expected_batches": len(ref)}), flush=True)


def sigint_with_the_batch(source):
    # Ctrl-C at random moments of an epoch of small batches (each well
    # inside one 50 ms wait slice): a signal that came in the slice its
    # batch landed in was raised as next() returned, and the batch was gone.
    # Each interrupted epoch must still be the whole epoch, in order.
    import random
    import threading
    signal.signal(signal.SIGINT, signal.default_int_handler)
    kw = dict(batch_size=8, pipeline="val", size=64, shuffle=False, threads=1)
    with ringfeed.Loader(source, **kw) as loader:
        ref = epoch_digest(loader)
    rng = random.Random(0)
    lost, interrupts = [], 0
    for trial in range(20):
        with ringfeed.Loader(source, **kw) as loader:
            got = []
            it = iter(loader)
            timer = threading.Timer(rng.uniform(0.0, 0.1), os.kill, (os.getpid(), signal.SIGINT))
            timer.start()
            while True:
                try:
                    batch = next(it)
                except StopIteration:
                    break
                except KeyboardInterrupt:
                    interrupts += 1
                    continue
                try:  # (a signal here is this script's, not the loader's: the batch is in hand)
                    got.append(digest(batch))
                except KeyboardInterrupt:
                    interrupts += 1
                    got.append(digest(batch))
            try:
                timer.join()  # a signal after the epoch: caught here, not in the next trial
            except KeyboardInterrupt:
                interrupts += 1
            if got != ref:
                lost.append(trial)
    print("RESULT " + json.dumps({"lost": lost, "interrupts": interrupts}), flush=True)


MODES = {f.__name__: f for f in (fork_started, fork_unstarted, fork_pool, fork_sysexit, sigint, sigint_resume,
                                 sigint_with_the_batch)}
SOURCE = None

if __name__ == "__main__":
    mode, SOURCE = sys.argv[1], sys.argv[2]
    MODES[mode](SOURCE)
    print("OK", flush=True)
