"""device="cuda" on a real GPU, the way a training loop uses it (issue 23).

Each consumer reads a batch with a long-running kernel on the stream current
at the time (torch.cuda._sleep: one busy kernel of SPIN_CYCLES cycles), then
copies it on that stream and frees the batch, with no host synchronization
anywhere between receiving, reading and freeing. The host runs far ahead of
the GPU, so a device buffer reused before the stream's read finished would
show up as another batch's pixels in the copy. The copies are compared bit
for bit with the host path (device=None, same seed) after one synchronize.

Without a CUDA device (CPU-only torch, as on the development machines) the
whole module is skipped with the reason; perf/gpu_machine.sh --step tests
runs it on a GPU machine.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip(f"no CUDA device: torch {torch.__version__} (CUDA {torch.version.cuda}) sees none",
                allow_module_level=True)

import ringfeed  # noqa: E402

from conftest import assert_same_batches, epoch_batches  # noqa: E402

KW = dict(batch_size=16, pipeline="train", size=96, seed=17, threads=2)
EPOCHS = 3
SPIN_CYCLES = 20_000_000  # ~10 ms of one busy kernel at ~2 GHz: far longer than a batch takes on the host


def host_epochs(train_dir, epochs):
    """The reference: the same loader on the host path, epochs 0..epochs-1."""
    loader = ringfeed.Loader(train_dir, **KW)
    try:
        return [epoch_batches(loader) for _ in range(epochs)]
    finally:
        loader.close()


def read_slowly(images, labels):
    """A slow training step's read of a batch, queued on the current stream
    and never waited for here: a long kernel first, then a copy."""
    torch.cuda._sleep(SPIN_CYCLES)
    return images.clone(), labels.clone()


def to_host(batches):
    torch.cuda.synchronize()  # the one host synchronization, after everything was freed
    return [(images.cpu(), labels.cpu()) for images, labels in batches]


@pytest.mark.parametrize("stream", ["default", "side"])
def test_slow_reader_without_host_sync_sees_the_host_batches(train_dir, stream):
    want = host_epochs(train_dir, EPOCHS)
    loader = ringfeed.Loader(train_dir, **KW, device="cuda", device_buffers=2)
    stats = loader.stats()
    assert stats["device"] == f"cuda:{torch.cuda.current_device()}", f"host batches: {stats['host_reason']}"
    side = torch.cuda.Stream() if stream == "side" else None
    got = []
    torch.cuda.synchronize()
    with torch.cuda.stream(side):  # None: the default stream
        torch.cuda.set_sync_debug_mode("error")  # a synchronizing torch call in the loop raises
        try:
            for _ in range(EPOCHS):
                epoch = []
                for images, labels in loader:
                    assert images.is_cuda and labels.is_cuda
                    epoch.append(read_slowly(images, labels))
                    del images, labels  # freed while the spin and the copy are still queued
                got.append(epoch)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    loader.close()
    for e in range(EPOCHS):
        assert_same_batches(to_host(got[e]), want[e], f"{stream} stream, epoch {e}")


def test_break_and_iterate_again(train_dir):
    rounds, taken = 4, 3
    want = host_epochs(train_dir, rounds + 1)
    loader = ringfeed.Loader(train_dir, **KW, device="cuda", device_buffers=2)
    got = []
    for _ in range(rounds):
        part = []
        for i, (images, labels) in enumerate(loader):
            part.append(read_slowly(images, labels))
            del images, labels
            if i + 1 == taken:
                break  # batches in flight are dropped; the next `for` starts the following epoch
        got.append(part)
    last = [read_slowly(images, labels) for images, labels in loader]
    loader.close()
    for r in range(rounds):
        assert_same_batches(to_host(got[r]), want[r][:taken], f"epoch {r}, left after {taken} batches")
    assert_same_batches(to_host(last), want[rounds], f"epoch {rounds}, after {rounds} breaks")


def test_set_epoch(train_dir):
    host = ringfeed.Loader(train_dir, **KW)
    host.set_epoch(7)
    want7 = epoch_batches(host)
    host.set_epoch(2)
    want2 = epoch_batches(host)
    host.close()
    assert not torch.equal(want7[0][0], want2[0][0]), "epochs 7 and 2 start alike: set_epoch changes nothing?"

    loader = ringfeed.Loader(train_dir, **KW, device="cuda", device_buffers=2)
    loader.set_epoch(7)
    part = []
    for i, (images, labels) in enumerate(loader):
        part.append(read_slowly(images, labels))
        del images, labels
        if i == 1:
            break
    loader.set_epoch(2)  # after a break: epoch 2 from its first batch, not epoch 8
    whole = [read_slowly(images, labels) for images, labels in loader]
    assert loader.epoch == 3
    loader.close()
    assert_same_batches(to_host(part), want7[:2], "epoch 7, first two batches")
    assert_same_batches(to_host(whole), want2, "epoch 2 after set_epoch(2)")


def test_load_state_dict_mid_epoch(train_dir):
    want = host_epochs(train_dir, 3)
    loader = ringfeed.Loader(train_dir, **KW, device="cuda", device_buffers=2)
    loader.set_epoch(1)
    it = iter(loader)
    before = [read_slowly(*next(it)) for _ in range(5)]
    state = loader.state_dict()
    assert (state["epoch"], state["next_batch"]) == (1, 5)
    held = next(it)  # batch 5 itself, kept (not copied) across load_state_dict
    torch.cuda._sleep(SPIN_CYCLES)
    held_copy = (held.images.clone(), held.labels.clone())
    beyond = [read_slowly(*next(it)) for _ in range(2)]  # batches 6 and 7: the loader is past the state
    loader.load_state_dict(state)  # mid-epoch, while batches of the old pipeline are still being read
    rest = [read_slowly(images, labels) for images, labels in loader]
    after = [read_slowly(images, labels) for images, labels in loader]
    loader.close()
    assert_same_batches(to_host(before + [held_copy] + beyond), want[1][:8], "epoch 1 before load_state_dict")
    assert_same_batches(to_host([held]), want[1][5:6], "batch 5 held across load_state_dict and close()")
    assert_same_batches(to_host(rest), want[1][5:], "epoch 1 resumed at batch 5")
    assert_same_batches(to_host(after), want[2], "epoch 2 after the resumed epoch")


def test_device_cuda_is_the_current_device(train_dir):
    # The second GPU where there is one (torch.cuda.set_device(1)), else device 0.
    target = 1 if torch.cuda.device_count() >= 2 else 0
    want = host_epochs(train_dir, 1)[0]
    previous = torch.cuda.current_device()
    torch.cuda.set_device(target)
    try:
        loader = ringfeed.Loader(train_dir, **KW, device="cuda")
        assert torch.cuda.current_device() == target, "constructing the loader changed the current device"
        assert loader.stats()["device"] == f"cuda:{target}"
        got, kept = [], None
        for images, labels in loader:
            assert images.device == torch.device("cuda", target), f"batch on {images.device}, current is cuda:{target}"
            assert labels.device == images.device
            got.append(read_slowly(images, labels))
            if kept is None:
                kept = images  # freed only after close()
            del images, labels
            assert torch.cuda.current_device() == target, "freeing a batch changed the current device"
        loader.close()
        assert torch.cuda.current_device() == target, "close() changed the current device"
        del kept
        assert torch.cuda.current_device() == target, "freeing a batch after close() changed the current device"
        assert_same_batches(to_host(got), want, f"device='cuda' with cuda:{target} current")
    finally:
        torch.cuda.set_device(previous)
