"""device="cuda" with a transform list (issue 24's recipes on issue 23's
device path): every recipe's device batches are bit for bit its host
batches, and the output is made where the plan says.

A list that ends in RGB bytes, then ToTensor / ConvertImageDtype (and
Normalize), is uploaded as uint8 and converted by the device kernel; any
other output (uint8 NHWC or NCHW, one channel, a trailing RandomErasing) is
made on the host and uploaded as it is. Both paths must give
the host loader's bytes: the kernel reads the same per-channel tables as the
CPU's output write, and RandomErasing draws from the same stream.

Skipped with the reason where torch sees no CUDA device;
perf/gpu_machine.sh --step tests runs it on a GPU machine.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip(f"no CUDA device: torch {torch.__version__} (CUDA {torch.version.cuda}) sees none",
                allow_module_level=True)

import ringfeed  # noqa: E402
import ringfeed.transforms as T  # noqa: E402

from conftest import assert_same_batches, epoch_batches  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
KW = dict(batch_size=8, seed=29, threads=2)


def ta_tail():
    return [T.RandomResizedCrop(48), T.RandomHorizontalFlip(), T.TrivialAugmentWide()]


# name: (transform, output, where the output is made, batch dtype, per-sample shape)
RECIPES = {
    "ta_totensor_normalize": (lambda: T.Compose(ta_tail() + [T.ToTensor(), T.Normalize(MEAN, STD)]),
                              None, "device", torch.float32, (3, 48, 48)),
    "ta_float16": (lambda: T.Compose(ta_tail() + [T.ToTensor(), T.Normalize(MEAN, STD)]),
                   "float16", "device", torch.float16, (3, 48, 48)),
    "autoaugment_convertimagedtype": (
        lambda: T.Compose([T.Resize(56), T.CenterCrop(48), T.AutoAugment(), T.PILToTensor(),
                           T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)]),
        None, "device", torch.float32, (3, 48, 48)),
    "no_tensor_op_uint8_nhwc": (lambda: T.Compose([T.RandomResizedCrop(40), T.ColorJitter(0.4, 0.4, 0.4, 0.1)]),
                                None, "host", torch.uint8, (40, 40, 3)),
    "reference_random_erasing": (
        lambda: T.Compose(ta_tail() + [T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD),
                                       T.RandomErasing(0.9)]),
        None, "host", torch.float32, (3, 48, 48)),
    "pil_to_tensor_uint8_nchw": (lambda: T.Compose(ta_tail() + [T.PILToTensor()]),
                                 None, "host", torch.uint8, (3, 48, 48)),
    "grayscale_one_channel": (
        lambda: T.Compose([T.Resize((28, 28)), T.Grayscale(), T.ToTensor(), T.Normalize((0.1307,), (0.3081,))]),
        None, "host", torch.float32, (1, 28, 28)),
}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_device_batches_of_a_recipe_equal_its_host_batches(train_dir, name):
    make, output, made_on, dtype, shape = RECIPES[name]
    extra = {"output": output} if output else {}
    host = ringfeed.Loader(train_dir, transform=make(), **KW, **extra)
    want = [epoch_batches(host), epoch_batches(host)]
    host.close()
    assert want[0][0][0].dtype == dtype and tuple(want[0][0][0].shape[1:]) == shape, \
        f"{name}: host batches are {want[0][0][0].dtype}{tuple(want[0][0][0].shape)}"

    loader = ringfeed.Loader(train_dir, transform=make(), **KW, **extra, device="cuda", device_buffers=2)
    stats = loader.stats()
    assert stats["device"] == f"cuda:{torch.cuda.current_device()}", f"host batches: {stats['host_reason']}"
    assert stats["output_made_on"] == made_on, f"{name}: output made on the {stats['output_made_on']}"
    got = []
    side = torch.cuda.Stream()
    for epoch in range(2):
        with torch.cuda.stream(side if epoch else None):  # epoch 1 read on a side stream
            batches = []
            for images, labels in loader:
                assert images.is_cuda and labels.is_cuda
                batches.append((images.clone(), labels.clone()))
                del images, labels
            got.append(batches)
    loader.close()
    torch.cuda.synchronize()
    for epoch in range(2):
        assert_same_batches([(i.cpu(), l.cpu()) for i, l in got[epoch]], want[epoch], f"{name}, epoch {epoch}")
