"""output="bfloat16" and the "_nhwc" outputs: bfloat16 is bit for bit what
torch's .to(torch.bfloat16) makes of the float32 batch; NHWC is the NCHW
batch in torch.channels_last memory format, the same values."""
from __future__ import annotations

import json

import pytest
import torch

import ringfeed

from conftest import run_cli

KW = dict(batch_size=8, pipeline="val", size=48, threads=2)


def batches(root, **kw):
    with ringfeed.Loader(root, **KW, **kw) as loader:
        return loader.stats()["output"], [images.clone() for images, _ in loader]


def bits(t):
    return t.contiguous().view(torch.int16)


def test_bfloat16_is_torchs_rounding_of_float32(val_dir):
    _, f32 = batches(val_dir, output="float32")
    name, bf16 = batches(val_dir, output="bfloat16")
    assert name == "bfloat16"
    assert len(bf16) == len(f32) > 0
    rounded = 0
    for got, want in zip(bf16, f32):
        assert got.dtype == torch.bfloat16 and got.shape == want.shape and got.is_contiguous()
        assert torch.equal(bits(got), bits(want.to(torch.bfloat16)))
        # values where rounding and truncation differ: a truncating conversion fails above
        rounded += int((bits(got) != (want.view(torch.int32) >> 16).to(torch.int16)).sum())
    assert rounded > 0


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_nhwc_is_channels_last_with_the_nchw_values(val_dir, dtype):
    _, nchw = batches(val_dir, output=dtype)
    name, nhwc = batches(val_dir, output=dtype + "_nhwc")
    assert name == dtype + "_nhwc"
    for got, want in zip(nhwc, nchw):
        assert got.dtype == want.dtype and got.shape == want.shape  # [B, 3, H, W]
        assert got.is_contiguous(memory_format=torch.channels_last) and not got.is_contiguous()
        if dtype == "float32":
            assert torch.equal(got, want)
        else:
            assert torch.equal(bits(got), bits(want))
        # the memory is NHWC: [B, H, W, 3] as a plain contiguous view
        assert got.permute(0, 2, 3, 1).is_contiguous()


def test_dataloader_takes_the_output(val_dir):
    from ringfeed import DataLoader
    kw = dict(batch_size=8, threads=2, seed=3)
    want = [images.clone() for images, _ in DataLoader(val_dir, output="float32", **kw)]
    dl = DataLoader(val_dir, output="bfloat16_nhwc", **kw)
    got = [images.clone() for images, _ in dl]
    assert dl.backend == "ringfeed"
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        assert g.dtype == torch.bfloat16 and g.is_contiguous(memory_format=torch.channels_last)
        assert torch.equal(bits(g), bits(w.to(torch.bfloat16)))


def test_bad_output_names_the_accepted_ones(val_dir):
    with pytest.raises(ValueError, match="bfloat16_nhwc"):
        ringfeed.Loader(val_dir, **KW, output="bfloat16_nchw")


def test_cli_bench_takes_the_new_outputs(val_dir):
    out = json.loads(run_cli("bench", val_dir, "--pipeline", "val", "--size", 32, "--batch", 8, "--threads", 2,
                             "--epochs", 1, "--output", "bfloat16_nhwc", "--json").stdout.splitlines()[-1])
    assert out["output"] == "bfloat16 NHWC"


def test_dataloader_fallback_says_the_output_is_not_applied():
    from ringfeed import DataLoader

    class Own(torch.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return torch.zeros(3, 4, 4), 0

    with pytest.warns(UserWarning, match=r"own __getitem__.*output='bfloat16' is not applied"):
        dl = DataLoader(Own(), batch_size=2, output="bfloat16")
    assert dl.backend == "torch"
    with pytest.raises(ValueError, match="output"):
        DataLoader(Own(), batch_size=2, output="int8")
