"""ringfeed.transforms and transform lists: pixel parity with torchvision on
PIL images (committed goldens, and torchvision itself where installed), the
translation of torchvision objects, errors, and the draws of random ops."""
import json
import math
import os

import pytest
import torch

import ringfeed
import ringfeed.transforms as RT
from ringfeed import _ringfeed

import transform_recipes as R

try:
    import torchvision.transforms as TV
except ImportError:  # goldens still cover the pixels
    TV = None

needs_torchvision = pytest.mark.skipif(TV is None, reason="torchvision is not installed (goldens cover pixels)")

with open(R.GOLDENS) as f:
    GOLDENS = json.load(f)


def _read(img):
    with open(os.path.join(R.DATA, img), "rb") as f:
        return f.read()


@pytest.mark.parametrize("rid", sorted(R.recipes(RT, torch)))
def test_each_recipe_is_bit_identical_to_torchvisions_golden_on_every_format(rid):
    transform = R.recipes(RT, torch)[rid]
    for img in R.IMAGES:
        got = ringfeed.decode(_read(img), transform=transform, exact=True, name=img)
        assert R.digest(got) == GOLDENS[rid][img], f"{rid} on {img}"


@needs_torchvision
@pytest.mark.parametrize("rid", sorted(R.recipes(RT, torch)))
def test_torchvision_objects_translate_to_the_same_pixels_as_torchvision(rid):
    transform = R.recipes(TV, torch)[rid]
    for img in R.IMAGES:
        got = ringfeed.decode(_read(img), transform=transform, exact=True, name=img)
        ref = R.reference(transform, os.path.join(R.DATA, img))
        assert got.dtype == ref.dtype and got.shape == ref.shape, f"{rid} on {img}"
        assert torch.equal(got, ref), f"{rid} on {img}: max diff {(got.double() - ref.double()).abs().max()}"


@needs_torchvision
def test_translation_reads_torchvision_attributes():
    t = TV.Compose([TV.RandomResizedCrop(176, scale=(0.25, 1), interpolation=TV.InterpolationMode.BICUBIC),
                    TV.RandomHorizontalFlip(0.3), TV.PILToTensor(), TV.ConvertImageDtype(torch.float),
                    TV.Normalize((0.5,), (0.25,)), TV.RandomErasing(0.1, value="random")])
    spec = _ringfeed._transform_spec(RT.to_spec(t))
    assert spec == _ringfeed._transform_spec(RT.to_spec(RT.Compose([
        RT.RandomResizedCrop(176, scale=(0.25, 1), interpolation=RT.InterpolationMode.BICUBIC),
        RT.RandomHorizontalFlip(0.3), RT.PILToTensor(), RT.ConvertImageDtype(torch.float),
        RT.Normalize((0.5,), (0.25,)), RT.RandomErasing(0.1, value="random")])))
    assert "interpolation=bicubic" in spec and "p=0.3" in spec and "value='random'" in spec
    # a spec reads back to itself
    assert _ringfeed._transform_spec(_ringfeed._transform_spec(spec)) == _ringfeed._transform_spec(spec)


def test_an_op_ringfeed_cannot_run_names_itself_its_position_and_what_is_supported():
    class Mine:
        def __call__(self, img):
            return img

    with pytest.raises(ValueError, match=r"transform 1 \(.*Mine\) is not a transform ringfeed can run; "
                                         r"supported: .*CenterCrop.*Resize"):
        RT.to_spec([RT.Resize(32), Mine(), RT.ToTensor()])
    if TV is not None:
        with pytest.raises(ValueError, match=r"transform 2 \(.*Lambda\)"):
            RT.to_spec(TV.Compose([TV.Resize(32), TV.ToTensor(), TV.Lambda(lambda x: x)]))


@pytest.mark.parametrize("make, message", [
    (lambda: RT.Resize(32, max_size=32), "max_size = 32 must be strictly greater"),
    (lambda: RT.Normalize((0.5,), (0.0,)), "std evaluated to zero"),
    (lambda: RT.RandomErasing(scale=(0.5, 2.0)), "Scale should be between 0 and 1"),
    (lambda: RT.RandomErasing(value="zeros"), "should be 'random'"),
    (lambda: RT.RandomHorizontalFlip(p=1.5), "p must be in"),
    (lambda: RT.Resize((1, 2, 3)), "sequence of 1 or 2"),
    (lambda: RT.Resize(32, interpolation="cubic"), "unknown value 'cubic'"),
])
def test_bad_arguments_raise_value_error_at_construction(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_calls_raise_type_error_as_python_does():
    with pytest.raises(TypeError, match="unexpected keyword argument 'sizes'"):
        RT.Resize(sizes=3)
    with pytest.raises(TypeError, match="missing required argument: 'size'"):
        RT.CenterCrop()


def test_an_op_that_cannot_take_what_comes_before_it_is_named():
    with pytest.raises(ValueError, match=r"transform 1 \(Normalize\).*expects a float tensor.*PIL image"):
        ringfeed.decode(_read("decode/rgb.jpg"), transform=[RT.Resize(8), RT.Normalize((0.5,), (0.5,))])
    with pytest.raises(ValueError, match=r"Normalize: mean and std have 2 values, the tensor has 3 channels"):
        ringfeed.decode(_read("decode/rgb.jpg"), transform=[RT.ToTensor(), RT.Normalize((0.5, 0.5), (0.5, 0.5))])


def test_the_spec_grammar_reports_the_column():
    with pytest.raises(ValueError, match="column 9"):
        _ringfeed._transform_spec("Resize(3; CenterCrop(2)")
    with pytest.raises(ValueError, match="unsupported transform 'Rezise'"):
        _ringfeed._transform_spec("Rezise(3)")


@needs_torchvision
def test_color_jitter_applies_its_drawn_order_and_factors_as_torchvisions_functions():
    import torchvision.transforms.functional as F
    from PIL import Image
    spec = RT.to_spec([RT.Resize((33, 21)), RT.ColorJitter(0.4, 0.4, 0.4, 0.1)])
    data = _read("photos/chelsea.jpg")
    fns = [F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue]
    for index in range(12):
        draws = _ringfeed._transform_draws(spec, 1, 21, 33, 3, 3, 0, index)
        order, factors = [int(k) for k in draws[:4]], draws[4:]
        with Image.open(os.path.join(R.DATA, "photos/chelsea.jpg")) as im:
            ref = TV.Resize((33, 21))(im.convert("RGB"))
        for k in order:
            ref = fns[k](ref, factors[k])
        got = ringfeed.decode(data, transform=spec, exact=True, seed=3, index=index)
        assert torch.equal(got, torch.from_numpy(__import__("numpy").array(ref))), f"sample {index}, order {order}"


# --- draws: the same distributions as torchvision's ------------------------------

N = 10000


def _ks(a, b):
    """Two-sample Kolmogorov-Smirnov statistic."""
    a, b = sorted(a), sorted(b)
    i = j = 0
    d = 0.0
    while i < len(a) and j < len(b):
        x = min(a[i], b[j])
        while i < len(a) and a[i] <= x:
            i += 1
        while j < len(b) and b[j] <= x:
            j += 1
        d = max(d, abs(i / len(a) - j / len(b)))
    return d


# D at alpha = 0.001 for two samples of N: 1.95 * sqrt(2 / N).
KS_CRITICAL = 1.95 * math.sqrt(2 / N)


def _ours(spec, w, h, position=0, seed=7):
    return [_ringfeed._transform_draws(spec, position, w, h, 3, seed, 0, i) for i in range(N)]


@needs_torchvision
@pytest.mark.parametrize("w, h, scale, ratio", [(451, 300, (0.08, 1.0), (3 / 4, 4 / 3)),
                                                (64, 640, (0.25, 1.0), (3 / 4, 4 / 3)),
                                                (500, 375, (0.9, 1.0), (0.5, 2.0))])
def test_random_resized_crop_draws_follow_torchvisions_get_params(w, h, scale, ratio):
    from PIL import Image
    img = Image.new("RGB", (w, h))
    torch.manual_seed(1)
    theirs = [TV.RandomResizedCrop.get_params(img, list(scale), list(ratio)) for _ in range(N)]
    ours = _ours(RT.to_spec(RT.RandomResizedCrop(32, scale=scale, ratio=ratio)), w, h)
    for k in range(4):  # top, left, height, width
        d = _ks([o[k] for o in ours], [t[k] for t in theirs])
        assert d < KS_CRITICAL, f"component {k}: KS {d:.4f} >= {KS_CRITICAL:.4f}"


@needs_torchvision
def test_random_erasing_draws_follow_torchvisions():
    erasing = TV.RandomErasing(p=0.7, scale=(0.02, 0.33), ratio=(0.3, 3.3))
    img = torch.zeros(3, 224, 176)
    torch.manual_seed(2)
    theirs = []
    for _ in range(N):
        if torch.rand(1) < erasing.p:
            i, j, h, w, _ = TV.RandomErasing.get_params(img, erasing.scale, erasing.ratio, [0])
            theirs.append((1, i, j, h, w) if h < 224 else (0,))
        else:
            theirs.append((0,))
    ours = _ours(RT.to_spec([RT.RandomErasing(p=0.7)]), 176, 224)
    rate_ours = sum(o[0] for o in ours) / N
    rate_theirs = sum(t[0] for t in theirs) / N
    assert abs(rate_ours - rate_theirs) < 4 * math.sqrt(0.25 / N) * 2
    for k in range(1, 5):
        d = _ks([o[k] for o in ours if o[0]], [t[k] for t in theirs if t[0]])
        assert d < 1.95 * math.sqrt(2 / (N * 0.6)), f"component {k}: KS {d:.4f}"


def test_flip_draws_are_bernoulli_p():
    ours = _ours("RandomHorizontalFlip(p=0.3)", 10, 10)
    rate = sum(1 for (u,) in ours if u < 0.3) / N
    assert abs(rate - 0.3) < 4 * math.sqrt(0.3 * 0.7 / N)


def test_random_choice_and_order_are_uniform():
    choice = _ours("RandomChoice([CenterCrop(1), CenterCrop(2), CenterCrop(3)])", 10, 10)
    counts = [sum(1 for (k,) in choice if k == i) for i in range(3)]
    assert all(abs(c - N / 3) < 4 * math.sqrt(N * (1 / 3) * (2 / 3)) for c in counts), counts
    order = _ours("RandomOrder([RandomHorizontalFlip(), RandomVerticalFlip(), RandomHorizontalFlip()])", 10, 10)
    perms = {}
    for o in order:
        perms[tuple(o)] = perms.get(tuple(o), 0) + 1
    assert len(perms) == 6
    assert all(abs(c - N / 6) < 4 * math.sqrt(N * (1 / 6) * (5 / 6)) for c in perms.values()), perms


def test_draws_depend_only_on_seed_epoch_and_index():
    spec = RT.to_spec([RT.RandomResizedCrop(32)])
    a = _ringfeed._transform_draws(spec, 0, 400, 300, 3, 5, 1, 17)
    assert a == _ringfeed._transform_draws(spec, 0, 400, 300, 3, 5, 1, 17)
    assert a != _ringfeed._transform_draws(spec, 0, 400, 300, 3, 5, 2, 17)
    assert a != _ringfeed._transform_draws(spec, 0, 400, 300, 3, 6, 1, 17)
