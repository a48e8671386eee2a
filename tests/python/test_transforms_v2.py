"""torchvision.transforms.v2, timm's evaluation transforms and lists built
from lists (issue 42): each
recipe of v2_recipes.py translates to the committed spec and gives
torchvision's bytes, from the committed goldens (made under torchvision
0.29; checked wherever the tests run) and live where v2 is installed."""
import json
import os

import pytest
import torch

import ringfeed
import ringfeed.transforms as RT

import transform_recipes as R
import v2_recipes as V

with open(R.V2_GOLDENS) as f:
    GOLDENS = json.load(f)
RECIPES = sorted(k for k in GOLDENS if not k.startswith("_"))

try:
    import torchvision.transforms as T
    from torchvision import tv_tensors
    from torchvision.transforms import v2
    LIVE = V.v2_recipes(v2, T, torch, tv_tensors)
    LIVE.update(V.v2_op_recipes(v2, torch))  # each v2 class with a v1 twin, draws pinned
except ImportError:  # torchvision 0.14: no v2.ToImage; the goldens still hold
    LIVE = None
try:
    import timm.data
    if LIVE is not None:
        LIVE.update(V.timm_recipes(timm.data))
except ImportError:  # timm is in the torch 2.x venv only
    pass
needs_v2 = pytest.mark.skipif(LIVE is None, reason="torchvision.transforms.v2 (0.16 or later) is not installed; "
                                                   "the goldens cover the bytes")


def _read(img):
    with open(os.path.join(R.DATA, img), "rb") as f:
        return f.read()


@pytest.mark.parametrize("rid", RECIPES)
def test_each_v2_recipe_gives_its_goldens_bytes_on_every_format(rid):
    spec = GOLDENS[rid]["spec"]
    for img in R.IMAGES:
        got = ringfeed.decode(_read(img), transform=spec, exact=True, name=img)
        assert R.digest(got) == GOLDENS[rid]["digests"][img], f"{rid} on {img}"


@needs_v2
@pytest.mark.parametrize("rid", RECIPES)
def test_each_v2_recipe_translates_to_its_spec_and_equals_torchvision(rid):
    if rid not in LIVE:
        pytest.skip("timm is not installed (the torch 2.x venv has it); the goldens cover the bytes")
    transform = LIVE[rid]
    assert RT.to_spec(transform) == GOLDENS[rid]["spec"]
    reference = v2.Compose(transform) if isinstance(transform, list) else transform
    for img in R.IMAGES[:6]:
        got = ringfeed.decode(_read(img), transform=transform, exact=True, name=img)
        want = R.reference(reference, os.path.join(R.DATA, img))
        assert got.dtype == want.dtype and got.shape == want.shape, f"{rid} on {img}"
        assert torch.equal(got, want), f"{rid} on {img}"


def test_v2s_scaling_is_a_multiply_not_v1s_divide():
    # 126 of the 256 values differ between x * float32(1/255) and x / 255
    data = _read("decode/rgb.jpg")
    v1 = ringfeed.decode(data, transform="Resize(40); PILToTensor(); ConvertImageDtype(float32)", exact=True)
    v2_ = ringfeed.decode(data, transform="Resize(40); ToImage(); ToDtype(float32, scale=True)", exact=True)
    assert v1.shape == v2_.shape and not torch.equal(v1, v2_)
    assert (v1 - v2_).abs().max() < 1e-7


@needs_v2
@pytest.mark.parametrize("name", ["RandomAffine", "RandomRotation", "AutoAugment", "RandAugment", "TrivialAugmentWide",
                                  "AugMix"])
def test_v2s_affine_ops_are_v2s_ops_not_v1s(name):
    # v2 rewrote the inverse affine matrix's double arithmetic and its
    # tensor kernels: v2's objects are v2's ops (test_augment_v2.py checks
    # their pixels); v1's stay v1's
    if name == "AugMix" and R.without_vector_unit():
        pytest.skip(R.without_vector_unit())  # refused there: test_cpu_capability.py
    make = (lambda m: getattr(m, name)((10, 10))) if name in ("RandomAffine", "RandomRotation") else \
        (lambda m: getattr(m, name)())
    assert RT.to_spec([make(v2)]).startswith(f"v2.{name}(")
    assert RT.to_spec([make(T)]).startswith(f"{name}(")


def test_an_op_on_a_tensor_that_needs_torchs_arithmetic_is_refused_naming_the_fix():
    with pytest.raises(ValueError, match=r"GaussianBlur expects a PIL image, but the transform before it gives "
                                         r"a uint8 tensor \(on a tensor torchvision computes GaussianBlur with "
                                         r"torch's arithmetic.*put ToImage\(\) / PILToTensor\(\) after it\)"):
        RT.output_of("ToImage(); GaussianBlur(3)")
    from ringfeed import _ringfeed
    with pytest.raises(ValueError, match="float16 inside a transform is not run by ringfeed"):
        _ringfeed._transform_spec("ToImage(); ToDtype(float16, scale=True)")


@pytest.mark.parametrize("spec", ["Compose([Compose([Resize(8)]), CenterCrop(8)]); Grayscale()",
                                  "Compose([Compose([Compose([Resize(8)])])])", "Compose(transforms=[Resize(8)])",
                                  "RandomApply([Compose([Resize(8), CenterCrop(8)]), Compose([Grayscale()])], p=0.5)",
                                  "RandomChoice([Compose([Resize(8)]), CenterCrop(8)])"])
def test_a_compose_nested_at_any_depth_parses_back_to_itself(spec):
    from ringfeed import _ringfeed
    once = _ringfeed._transform_spec(spec)
    assert _ringfeed._transform_spec(once) == once
    assert not once.startswith("Compose(")  # a Compose in the list is opened in place


@needs_v2
@pytest.mark.parametrize("padding", [(3, 1), (1, 2, 3, 4)])
def test_v2_random_crops_padding_is_translated_in_torchvisions_order(padding):
    # v2.RandomCrop keeps its padding as torch's [left, right, top, bottom];
    # the spec takes torchvision's (left, top, right, bottom); one crop fits
    pad = padding * 2 if len(padding) == 2 else padding
    size = (13 + pad[1] + pad[3], 17 + pad[0] + pad[2])
    transform = v2.Compose([v2.Resize((13, 17)), v2.RandomCrop(size, padding=padding, fill=9), v2.ToImage()])
    got = ringfeed.decode(_read("decode/rgb.jpg"), transform=transform, exact=True)
    assert torch.equal(got, R.reference(transform, os.path.join(R.DATA, "decode/rgb.jpg")))


def test_interpolation_is_written_as_its_mode_however_it_was_spelled():
    # torchvision 0.29's v2 classes keep interpolation as given (default
    # "bilinear", a str); 0.26's and v1's store the enum: one spec for all
    want = RT.to_spec(RT.Resize(8, interpolation=RT.InterpolationMode.BICUBIC))
    assert "interpolation=bicubic," in want
    for spelled in ("bicubic", 3):
        assert RT.to_spec(RT.Resize(8, interpolation=spelled)) == want


@needs_v2
@pytest.mark.parametrize("make", [lambda i: v2.Resize(24, interpolation=i),
                                  lambda i: v2.RandomResizedCrop(24, scale=(1.0, 1.0), ratio=(1.0, 1.0),
                                                                 interpolation=i)],
                         ids=["Resize", "RandomResizedCrop"])
def test_v2s_interpolation_spelled_as_a_string_an_enum_or_a_pil_filter_gives_one_spec_and_torchvisions_bytes(make):
    from PIL import Image
    spellings = [v2.InterpolationMode.BICUBIC, Image.Resampling.BICUBIC, 3]
    try:  # strings from torchvision 0.28 on; 0.26 refuses them when the op runs, and so does ringfeed
        v2.Compose([make("bicubic"), v2.PILToTensor()])(Image.open(os.path.join(R.DATA, R.IMAGES[0])).convert("RGB"))
        spellings.append("bicubic")
    except ValueError:
        with pytest.raises(ValueError, match=r"\(Resize|RandomResizedCrop\)\.interpolation: torchvision .* refuses"):
            RT.to_spec([make("bicubic"), v2.PILToTensor()])
    specs = {RT.to_spec([make(i), v2.PILToTensor()]) for i in spellings}
    assert len(specs) == 1 and "interpolation=bicubic," in specs.pop()
    for i in spellings:
        for img in R.IMAGES[:3]:
            got = ringfeed.decode(_read(img), transform=[make(i), v2.PILToTensor()], exact=True, name=img)
            want = R.reference(v2.Compose([make(i), v2.PILToTensor()]), os.path.join(R.DATA, img))
            assert torch.equal(got, want), f"{i!r} on {img}"


@needs_v2
@pytest.mark.parametrize("spelled", ["nearest-exact", "NEAREST_EXACT"])
def test_nearest_exact_is_refused_naming_it_however_it_was_spelled(spelled):
    mode = getattr(v2.InterpolationMode, spelled, spelled)
    # ringfeed's refusal, or (a string on torchvision 0.26) torchvision's own
    with pytest.raises(ValueError, match="unknown value 'nearest-exact'|refuses it: .* got nearest-exact"):
        RT.to_spec(v2.Resize(8, interpolation=mode))
