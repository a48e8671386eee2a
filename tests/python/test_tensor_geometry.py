"""Geometry after ToImage() (issue 42): Resize, RandomResizedCrop,
CenterCrop, RandomCrop with padding, Pad and the flips on uint8 and float32
tensors run torch's arithmetic, as torchvision decides it by where the op
sits. Each recipe of v2_recipes.tensor_geometry_recipes gives torchvision's
output: uint8 byte for byte, float32 within 1e-6 (torch's own float sums
may be fused by its compiler). Checked live where torchvision.transforms.v2
is installed and against the committed goldens everywhere (made under torch
2.x, one set with ATEN_CPU_CAPABILITY=default, where v2's uint8 bilinear
resizes a float copy and rounds; the tests switch ringfeed to each
golden's torch while they run)."""
import base64
import json
import os
import zlib

import numpy as np
import pytest
import torch

import ringfeed
import ringfeed.transforms as RT
from ringfeed import _ringfeed

import transform_recipes as R
import v2_recipes as V

# float32 goldens hold the values (not a digest): one image keeps them small
FLOAT_GOLDEN_IMAGES = ["decode/rgb.jpg"]
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)

with open(R.TENSOR_GOLDENS) as f:
    GOLDENS = json.load(f)
RECIPES = sorted(k for k in GOLDENS if not k.startswith("_"))

try:
    from torchvision.transforms import v2
    LIVE = V.tensor_geometry_recipes(v2, torch) if hasattr(v2, "ToImage") else None
except ImportError:
    LIVE = None
needs_v2 = pytest.mark.skipif(LIVE is None, reason="torchvision.transforms.v2 (0.16 or later) is not installed; "
                                                   "the goldens cover the values")


def _read(img):
    with open(os.path.join(R.DATA, img), "rb") as f:
        return f.read()


def encode_values(tensor):
    a = np.ascontiguousarray(tensor.numpy(), dtype=np.float32)
    return {"shape": list(a.shape), "zlib_b64": base64.b64encode(zlib.compress(a.tobytes(), 9)).decode()}


def decode_values(entry):
    a = np.frombuffer(zlib.decompress(base64.b64decode(entry["zlib_b64"])), dtype=np.float32)
    return torch.from_numpy(a.reshape(entry["shape"]).copy())


def assert_same(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, f"{what}: {got.dtype} {tuple(got.shape)} vs " \
                                                                f"{want.dtype} {tuple(want.shape)}"
    if got.dtype == torch.uint8:
        bad = (got != want).sum().item()
        assert bad == 0, f"{what}: {bad} bytes differ (max {(got.int() - want.int()).abs().max().item()})"
    else:
        diff = (got - want).abs().max().item()
        assert diff <= 1e-6, f"{what}: values differ by {diff}"


class golden_reference:
    """ringfeed follows a golden's torch while the block runs."""

    def __init__(self, reference):
        self.reference = reference

    def __enter__(self):
        RT.follow_installed_torch()
        _ringfeed._set_torch_reference(self.reference)
        return self

    def __exit__(self, *exc):
        RT._followed = None  # back to the installed torch's, named as ever
        RT.follow_installed_torch()


@pytest.mark.parametrize("rid", RECIPES)
def test_each_recipe_gives_its_goldens_values(rid):
    golden = GOLDENS[rid]
    with golden_reference(golden["reference"]):
        if "digests" in golden:
            for img, want in golden["digests"].items():
                got = ringfeed.decode(_read(img), transform=golden["spec"], exact=True, name=img)
                assert R.digest(got) == want, f"{rid} on {img}"
        for img, entry in golden.get("values", {}).items():
            got = ringfeed.decode(_read(img), transform=golden["spec"], exact=True, name=img)
            assert_same(got, decode_values(entry), f"{rid} on {img}")


@needs_v2
@pytest.mark.parametrize("rid", sorted(LIVE or []))
def test_each_recipe_translates_to_its_spec_and_equals_torchvision(rid):
    transform = LIVE[rid]
    if rid in GOLDENS:
        assert RT.to_spec(transform) == GOLDENS[rid]["spec"]
    # on a CPU without AVX2 v2 resizes a float copy (the "tgdefault_" goldens)
    reference = v2.Compose(transform)
    for img in R.IMAGES:
        got = ringfeed.decode(_read(img), transform=transform, exact=True, name=img)
        assert_same(got, R.reference(reference, os.path.join(R.DATA, img)), f"{rid} on {img}")


def test_bilinear_keeps_uint8_on_avx_and_rounds_a_float_resize_without(torch_reference_restored):
    # v2's resize_image: torch's uint8 kernel (int16 weights) where the CPU
    # capability is AVX2 / AVX512, else a float resize rounded: other bytes
    # somewhere on a photo; bicubic keeps uint8 on every CPU
    RT.follow_installed_torch()  # before setting another: decode() follows the installed torch once
    data = _read("photos/chelsea.jpg")

    def run(cpu, interpolation):
        _ringfeed._set_torch_reference(f"torch=2.14.1 cpu={cpu}")
        return ringfeed.decode(data, exact=True,
                               transform=f"ToImage(); Resize((37, 29), interpolation={interpolation}, antialias=True)")
    native, via_float = run("AVX512", "bilinear"), run("DEFAULT", "bilinear")
    assert native.dtype == via_float.dtype == torch.uint8 and native.shape == via_float.shape
    assert torch.equal(native, run("AVX2", "bilinear"))
    assert not torch.equal(native, via_float)
    assert (native.int() - via_float.int()).abs().max().item() <= 1
    assert torch.equal(run("AVX512", "bicubic"), run("DEFAULT", "bicubic"))


def test_torch1s_tensor_resize_is_refused_but_nearest(torch_reference_restored):
    RT.follow_installed_torch()
    _ringfeed._set_torch_reference("torch=1.13.1 cpu=AVX2")
    with pytest.raises(ValueError, match=r"Resize: interpolation=bilinear on a tensor under torch 1.13.1.*torch 1.x's "
                                         r"float interpolate kernels sum in an order ringfeed does not follow"):
        ringfeed.decode(_read("decode/rgb.jpg"), transform="PILToTensor(); Resize(20)", exact=True)
    got = ringfeed.decode(_read("decode/rgb.jpg"), transform="PILToTensor(); Resize(20, interpolation=nearest)",
                          exact=True)
    assert got.dtype == torch.uint8 and min(got.shape[1:]) == 20


@pytest.mark.parametrize("spec, words", [
    ("ToImage(); Resize(20, interpolation=lanczos)", ["Resize", "lanczos", "tensor"]),
    ("ToImage(); RandomResizedCrop(20, interpolation=box)", ["RandomResizedCrop", "box", "tensor"]),
    ("ToImage(); Pad(2, fill=1.5)", ["Pad", "fill", "uint8 tensor"]),
    ("Resize((13, 17)); ToImage(); Pad(20, padding_mode=reflect)", ["Pad", "reflect", "larger"]),
])
def test_what_does_not_run_on_tensors_is_refused_by_name(spec, words):
    with pytest.raises(ValueError) as e:
        ringfeed.decode(_read("decode/rgb.jpg"), transform=spec, exact=True)
    for w in words:
        assert w in str(e.value), str(e.value)


@pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2, reason="torch 1.x runs v1's tensor resize")
def test_a_v1_resize_of_a_uint8_tensor_under_torch2_is_refused_by_name():
    T = pytest.importorskip("torchvision.transforms")
    with pytest.raises(ValueError, match=r"transform 1 \(Resize\).*v1.*uint8 tensor"):
        RT.to_spec([T.PILToTensor(), T.Resize(20)])
    assert "Resize" in RT.to_spec([T.Resize(20), T.PILToTensor()])  # on the PIL image: Pillow's, as ever


@needs_v2
def test_the_issues_train_snippet_runs_natively_with_torchs_batches(train_dir):
    # issue 42's snippet without TrivialAugmentWide, its draws pinned: the
    # crop is RandomResizedCrop's fallback (scale 1, ratio 1: the centred
    # square), the flip always, the erasing never
    import warnings

    import torchvision.datasets as datasets
    transform = v2.Compose([v2.ToImage(), v2.RandomResizedCrop(24, scale=(1.0, 1.0), ratio=(1.0, 1.0), antialias=True),
                            v2.RandomHorizontalFlip(p=1.0), v2.ToDtype(torch.float32, scale=True),
                            v2.Normalize(MEAN, STD), v2.RandomErasing(0.0)])
    dataset = datasets.ImageFolder(train_dir, transform=transform)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = ringfeed.DataLoader(dataset, batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(5),
                                   exact=True, strict=True)
    assert ours.backend == "ringfeed" and ours.fallback_reason is None
    theirs = torch.utils.data.DataLoader(dataset, batch_size=16, shuffle=True,
                                         generator=torch.Generator().manual_seed(5))
    got = [(x.clone(), y.clone()) for x, y in ours]
    want = list(theirs)
    assert len(got) == len(want)
    for k, ((gx, gy), (wx, wy)) in enumerate(zip(got, want)):
        assert torch.equal(gy, wy), f"batch {k} labels"
        assert_same(gx, wx, f"batch {k}")


@needs_v2
def test_the_issues_whole_train_snippet_runs_natively(train_dir):
    # the snippet as the issue writes it, TrivialAugmentWide after ToImage
    # included: native (strict=True: no fallback), every batch whole; its
    # ops' bytes are checked above, in test_augment_v2.py and in the goldens
    if R.without_vector_unit():
        pytest.skip(R.without_vector_unit())  # refused there: test_cpu_capability.py
    import torchvision.datasets as datasets
    transform = v2.Compose([v2.ToImage(), v2.RandomResizedCrop(24, antialias=True), v2.RandomHorizontalFlip(),
                            v2.TrivialAugmentWide(), v2.ToDtype(torch.float32, scale=True),
                            v2.Normalize(MEAN, STD), v2.RandomErasing(0.1)])
    dataset = datasets.ImageFolder(train_dir, transform=transform)
    loader = ringfeed.DataLoader(dataset, batch_size=16, shuffle=True, strict=True)
    assert loader.backend == "ringfeed" and loader.fallback_reason is None
    n = 0
    for x, y in loader:
        assert x.dtype == torch.float32 and tuple(x.shape[1:]) == (3, 24, 24) and len(y) == len(x)
        assert torch.isfinite(x).all()
        n += len(x)
    assert n == len(dataset)


# ToImage() then RandomResizedCrop first in the list (v2's train recipe):
# fast mode draws the crop from the file's header size and decodes only
# that region of a JPEG, then runs torch's resize on it. Each output equals
# exact mode's (a full decode, the crop, the resize), byte for byte, for
# crops anywhere in the image (indices draw them), baseline, progressive,
# arithmetic, grey, CMYK and EXIF-tagged files, and a PNG (the general path).
REGION_IMAGES = ["photos/chelsea.jpg", "photos/coffee_portrait.jpg", "photos/brick_gray.jpg", "decode/progressive.jpg",
                 "decode/arithmetic.jpg", "decode/cmyk.jpg", "decode/gray.jpg", "decode/exif6.jpg", "decode/rgba.png"]


@pytest.mark.parametrize("resize", ["interpolation=bilinear, antialias=True", "interpolation=bicubic, antialias=True",
                                    "interpolation=bilinear, antialias=False", "interpolation=nearest"])
def test_a_crop_after_to_image_decodes_its_region_with_exact_modes_bytes(resize, torch_reference_restored):
    RT.follow_installed_torch()
    _ringfeed._set_torch_reference("torch=2.14.1 cpu=AVX2")  # the tensor filters run under both pythons
    specs = [f"ToImage(); RandomResizedCrop((29, 23), {resize})",
             f"ToImage(); RandomResizedCrop(40, scale=(0.01, 0.05), {resize}); RandomHorizontalFlip(p=0.5); "
             "ToDtype(dtype=float32, scale=True); Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))"]
    for img in REGION_IMAGES:
        data = _read(img)
        for spec in specs:
            for index in range(24):
                fast = ringfeed.decode(data, transform=spec, exact=False, seed=7, index=index, name=img)
                exact = ringfeed.decode(data, transform=spec, exact=True, seed=7, index=index, name=img)
                assert fast.dtype == exact.dtype and torch.equal(fast, exact), f"{img}, {spec}, sample {index}"
