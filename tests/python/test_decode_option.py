"""decode="auto"|"cpu"|"gpu" (issue 43) on Loader and DataLoader: the names
are checked, ringfeed::resolve refuses "gpu" where the GPU cannot decode
(saying why) and settles "auto", and stats() reports the choice
("decode_reason") and where images were decoded ("gpu_decode"). The rules
themselves are tested in tests/resolve_tests.cpp; here, that Python reaches
them and gets their words as ValueError."""
import json
import subprocess

import numpy as np
import pytest

import ringfeed
from conftest import cli_path, run_cli

torch = pytest.importorskip("torch")

NO_CUDA = not torch.cuda.is_available()


def test_a_bad_decode_name_lists_the_accepted_ones(val_dir):
    with pytest.raises(ValueError, match=r"decode must be one of 'auto', 'cpu', 'gpu', not 'nvjpeg'"):
        ringfeed.Loader(val_dir, decode="nvjpeg")
    with pytest.raises(ValueError, match=r"decode must be one of 'auto', 'cpu', 'gpu', not 'GPU'"):
        ringfeed.DataLoader(val_dir, batch_size=4, decode="GPU")


@pytest.mark.parametrize("kwargs, words", [
    (dict(device=None), r"decode=\"gpu\": it decodes into batches on a CUDA device.*device=\"cuda\""),
    (dict(device="cuda", exact=True),
     r"not with exact=True: the GPU's IDCT and chroma upsampling are not libjpeg-turbo's, so "
     r"torchvision-identical pixels cannot hold; use exact=False or decode=\"cpu\""),
    (dict(device="cuda", transform="RandomResizedCrop(32); ColorJitter(0.4); ToTensor()"),
     r"decode=\"gpu\": ColorJitter has no device kernel .*use decode=\"auto\" or \"cpu\""),
], ids=["host batches", "exact", "op without a device kernel"])
def test_decode_gpu_is_refused_where_the_gpu_cannot_decode(val_dir, kwargs, words):
    with pytest.raises(ValueError, match=words):
        ringfeed.Loader(val_dir, batch_size=4, decode="gpu", **kwargs)


def test_decode_gpu_is_refused_for_the_pixel_cache_and_images_in_memory(val_dir, tmp_path):
    with pytest.raises(ValueError, match=r"not with cache=\"pixels\", which keeps pixels decoded on the CPU"):
        ringfeed.Loader(val_dir, batch_size=4, device="cuda", cache_dir=tmp_path, cache="pixels", decode="gpu")
    images = np.zeros((4, 8, 8, 3), dtype=np.uint8)  # what DataLoader passes for CIFAR and MNIST
    with pytest.raises(ValueError, match=r"given in memory as pixels, so there is nothing to decode"):
        ringfeed.Loader("CIFAR10(memory)", batch_size=4, transform="ToTensor()", device="cuda",
                        _pixels=(images, [0, 1, 2, 3]), decode="gpu")
    # the same images with decode="auto": the CPU, saying why
    s = ringfeed.Loader("CIFAR10(memory)", batch_size=4, transform="ToTensor()", device="cuda",
                        _pixels=(images, [0, 1, 2, 3])).stats()
    assert s["decode_reason"] == "cpu: the images are in memory as pixels: nothing to decode"


def test_dataloader_passes_decode_to_resolve(val_dir):
    with pytest.raises(ValueError, match=r"decode=\"gpu\": it decodes into batches on a CUDA device"):
        ringfeed.DataLoader(val_dir, batch_size=4, decode="gpu")
    s = ringfeed.DataLoader(val_dir, batch_size=4, decode="cpu").stats()
    assert s["decode_reason"] == "asked"
    assert s["gpu_decode"]["where"] == "cpu"


@pytest.mark.parametrize("kwargs, reason", [
    (dict(size=32), "cpu: batches stay on the host (no device)"),
    (dict(size=32, device="cuda", exact=True), "cpu: exact mode"),
    (dict(device="cuda", transform="RandomResizedCrop(32); ColorJitter(0.4); ToTensor()"),
     "cpu: ColorJitter has no device kernel"),
], ids=["host batches", "exact", "op without a device kernel"])
def test_decode_auto_falls_to_the_cpu_with_the_reason(val_dir, kwargs, reason):
    loader = ringfeed.Loader(val_dir, batch_size=4, **kwargs)
    assert sum(len(b.labels) for b in loader) == loader.dataset_size  # the CPU decoded the epoch
    s = loader.stats()
    assert s["decode_reason"].startswith(reason), s["decode_reason"]
    g = s["gpu_decode"]
    assert g["where"] == "cpu"
    assert g["images"] == {"hardware": 0, "hybrid": 0, "cpu": 0}  # counted only for a GPU-decoding loader
    assert set(g) == {"where", "reason", "decoder", "hardware_engines", "images", "gpu_s", "cpu_s", "fallbacks",
                      "slot_bytes", "cpu_reasons", "split_batches"}


def test_decode_cpu_is_reported_as_asked(val_dir):
    s = ringfeed.Loader(val_dir, batch_size=4, device="cuda", decode="cpu").stats()
    assert s["decode_reason"] == "asked"
    assert s["gpu_decode"]["where"] == "cpu"


@pytest.mark.skipif(not NO_CUDA, reason="the fall back to the CPU is what a machine without CUDA shows")
@pytest.mark.parametrize("decode", ["auto", "gpu"])
def test_without_a_device_the_cpu_decodes_device_batches_asked_of_the_gpu(val_dir, decode):
    # resolve() settles gpu (device batches, fast mode, every op with a device
    # kernel); the loader finds no device at open and decodes on the CPU.
    loader = ringfeed.Loader(val_dir, batch_size=4, size=32, device="cuda", decode=decode)
    assert sum(len(b.labels) for b in loader) == loader.dataset_size
    s = loader.stats()
    if decode == "gpu":
        assert s["decode_reason"] == "asked"
    else:
        assert s["decode_reason"].startswith("gpu: device batches, fast mode"), s["decode_reason"]
    assert s["gpu_decode"]["where"] == "cpu"


@pytest.mark.skipif(not NO_CUDA, reason="the fall back to the CPU is what a machine without CUDA shows")
def test_only_a_gpu_asked_for_is_named_when_the_cpu_decodes_instead(val_dir):
    # bench's default is decode=auto with device 0: resolve() settles it to
    # the GPU, the open loader finds no device. The user never wrote
    # decode="gpu", so no line may say they did.
    common = ("bench", val_dir, "--pipeline", "val", "--size", 32, "--batch", 8, "--json")
    auto = run_cli(*common)
    assert 'decode="gpu"' not in auto.stderr, auto.stderr
    assert json.loads(auto.stdout.strip().splitlines()[-1])["gpu_decode"]["where"] == "cpu"
    asked = run_cli(*common, "--decode", "gpu")
    assert 'decode="gpu": the CPU decodes instead: no device output' in asked.stderr, asked.stderr


def test_the_cli_settles_decode_as_python_does(val_dir):
    cli = json.loads(run_cli("bench", val_dir, "--pipeline", "val", "--size", 32, "--batch", 8,
                             "--device", -1, "--json").stdout)
    python = ringfeed.Loader(val_dir, batch_size=8, pipeline="val", size=32).stats()
    assert cli["decode_reason"] == python["decode_reason"]
    assert cli["gpu_decode"]["where"] == python["gpu_decode"]["where"] == "cpu"
    refused = subprocess.run([cli_path(), "bench", val_dir, "--pipeline", "val", "--size", "32", "--exact",
                              "--decode", "gpu"], capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0
    assert "decode=\"gpu\": not with exact=True" in refused.stderr, refused.stderr
