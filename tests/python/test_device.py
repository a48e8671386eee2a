"""The CUDA path: device="cuda" batches are bit-for-bit the host batches, on
the default stream and on a side stream, held or released. Without a CUDA
device (or a CPU-only torch) the loader falls back to host batches."""
from __future__ import annotations

import warnings

import pytest
import torch

import ringfeed

from conftest import assert_same_batches, epoch_batches

KW = dict(batch_size=16, pipeline="train", size=96, seed=6, threads=2)


def require_cuda():
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA device: torch {torch.__version__} CUDA available {torch.cuda.is_available()}")


@pytest.mark.parametrize("output", ["float32", "float16", "uint8"])
def test_device_batches_equal_host_batches(train_dir, output):
    require_cuda()
    host = ringfeed.Loader(train_dir, **KW, output=output)
    want = [epoch_batches(host), epoch_batches(host)]
    host.close()

    loader = ringfeed.Loader(train_dir, **KW, output=output, device="cuda", device_buffers=3)
    stats = loader.stats()
    assert stats["device"] == "cuda:0", f"device batches were asked for, got host ones: {stats['host_reason']}"
    held = []  # (epoch, batch number, images) kept across the epochs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # holding batches: later ones are copies
        # Epoch 0 on the default stream: every third batch held, the others released.
        for i, (images, labels) in enumerate(loader):
            assert images.is_cuda and images.device.index == 0
            assert images.dtype == want[0][i][0].dtype and images.shape == want[0][i][0].shape
            assert torch.equal(labels.cpu(), want[0][i][1]), f"epoch 0 batch {i}: labels"
            assert torch.equal(images.cpu(), want[0][i][0]), f"epoch 0 batch {i}: pixels differ from host"
            if i % 3 == 0:
                held.append((0, i, images))
        # Epoch 1 on a side stream: the batch is read by work queued on it.
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            for i, (images, labels) in enumerate(loader):
                assert images.is_cuda
                doubled = images.float() * 2  # queued on the side stream
                assert torch.equal(images.cpu(), want[1][i][0]), f"epoch 1 batch {i}: pixels differ from host"
                assert torch.equal((doubled / 2).to(images.dtype).cpu(), want[1][i][0])
                assert torch.equal(labels.cpu(), want[1][i][1])
                if i % 3 == 1:
                    held.append((1, i, images))
                del doubled
        torch.cuda.synchronize()
    assert loader.epoch == 2
    for epoch, i, images in held:
        assert torch.equal(images.cpu(), want[epoch][i][0]), f"held epoch {epoch} batch {i} changed"
    loader.close()
    torch.cuda.synchronize()
    for epoch, i, images in held:
        assert torch.equal(images.cpu(), want[epoch][i][0]), f"held epoch {epoch} batch {i} changed after close()"


def test_device_resume_equals_host(train_dir):
    require_cuda()
    host = epoch_batches(ringfeed.Loader(train_dir, **KW))
    loader = ringfeed.Loader(train_dir, **KW, device="cuda")
    it = iter(loader)
    for _ in range(4):
        next(it)
    resumed = ringfeed.Loader(train_dir, **KW, device=torch.device("cuda", 0))
    resumed.load_state_dict(loader.state_dict())
    got = [(x.cpu(), y.cpu()) for x, y in resumed]
    assert_same_batches(got, host[4:], "device loader resumed at batch 4")


def test_without_cuda_device_batches_stay_on_host(train_dir):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is available: test_device_batches_equal_host_batches covers it")
    kw = dict(KW, batch_size=64)
    loader = ringfeed.Loader(train_dir, **kw, device="cuda")
    stats = loader.stats()
    assert stats["device"] == "host" and stats["host_reason"] and stats["output_made_on"] == "host", stats
    got = epoch_batches(loader)
    assert all(x.device.type == "cpu" for x, _ in got)
    assert_same_batches(got, epoch_batches(ringfeed.Loader(train_dir, **kw)), "host fallback vs. device=None")


def test_cuda_without_index_is_torchs_current_device(monkeypatch):
    # torchrun: torch.cuda.set_device(local_rank), then device="cuda" (or
    # torch.device("cuda")) must mean that GPU, as it does in torch.
    from ringfeed import loader as loader_module
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    assert loader_module._device_index("cuda") == 3
    assert loader_module._device_index(torch.device("cuda")) == 3
    assert loader_module._device_index("cuda:1") == 1
    assert loader_module._device_index(torch.device("cuda", 0)) == 0
    assert loader_module._device_index(2) == 2


def test_freeing_a_device_batch_asks_torch_for_its_stream(monkeypatch):
    # The default stream is handle 0: it is returned as 0 (a real stream to
    # order on), not mistaken for "unknown"; without CUDA the answer is None
    # (then the stream the batch waited on is used).
    from ringfeed import loader as loader_module

    class Stream:
        cuda_stream = 0

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device: Stream())
    assert loader_module._stream_query(0) == 0
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert loader_module._stream_query(0) is None
