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
    # antialias: None in torchvision 0.14, True from 0.17 (it decides only on tensors)
    assert spec == _ringfeed._transform_spec(RT.to_spec(RT.Compose([
        RT.RandomResizedCrop(176, scale=(0.25, 1), interpolation=RT.InterpolationMode.BICUBIC,
                             antialias=t.transforms[0].antialias),
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


def test_random_order_names_the_transform_that_changes_channels():
    # every order of [Grayscale()] gives 1 channel, but ringfeed requires each
    # transform of a RandomOrder to keep its input's kind and channels
    with pytest.raises(ValueError, match=r"RandomOrder: .*keep the kind and channels.*Grayscale turns a PIL image, 3 "
                                         r"channels into a PIL image, 1"):
        ringfeed.decode(_read("decode/rgb.jpg"), transform=[RT.RandomOrder([RT.Grayscale()])])


@pytest.mark.parametrize("name", ["transforms/row_10x1.png", "transforms/row_10x1.jpg"])
@pytest.mark.parametrize("exact", [True, False])
def test_an_empty_random_resized_crop_first_gives_black_as_pillow(name, exact):
    # torchvision's fallback on a 10x1 image at ratio 1/4 crops (0, 5, 1, 0):
    # Pillow resamples that empty crop to zeros. First in the list, the crop
    # runs in the fused decode (fast mode: the JPEG region path).
    crop = RT.RandomResizedCrop(5, scale=(1.0, 1.0), ratio=(0.25, 0.25))
    got = ringfeed.decode(_read(name), transform=[crop], exact=exact)
    assert got.shape == (5, 5, 3) and not got.any()
    got = ringfeed.decode(_read(name), transform=[crop, RT.RandomHorizontalFlip(1.0), RT.ToTensor(),
                                                  RT.Normalize((0.5,), (0.5,))], exact=exact)
    assert got.shape == (3, 5, 5) and bool((got == -1.0).all())
    if TV is not None:
        t = TV.Compose([TV.RandomResizedCrop(5, scale=(1.0, 1.0), ratio=(0.25, 0.25)), TV.PILToTensor()])
        assert torch.equal(ringfeed.decode(_read(name), transform=t, exact=exact),
                           R.reference(t, os.path.join(R.DATA, name)))


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

N = R.N
_ks = R.ks
KS_CRITICAL = R.KS_CRITICAL


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


# --- AutoAugment, RandAugment, TrivialAugmentWide -----------------------------------

_AUG_NAMES = ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color",
              "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert"]


# sha256[:16] of torch.linspace's float32 bytes as each torch computes them,
# for (op, wide, bins) on a 224-wide image: torch 1.13.1 on AVX2 (Debian's),
# torch 2.14.1 on AVX512 (fused multiply-add) and with
# ATEN_CPU_CAPABILITY=default (no vector unit).
_LINSPACE_GOLDENS = {
    "torch=1.13.1 cpu=AVX2": {("TranslateX", False, 64): "335ecfcbca2514c4", ("TranslateX", False, 100): "51665fb27c021720",
                              ("ShearX", False, 64): "22800662831fdacb", ("Solarize", False, 100): "7c029917f62d2d2e",
                              ("Rotate", True, 64): "bf4fee835b9d3f85"},
    "torch=2.14.1+cu130 cpu=AVX512": {("TranslateX", False, 64): "13c1f223315ddc45",
                                      ("TranslateX", False, 100): "dc2ace1e801176d1",
                                      ("ShearX", False, 64): "40ed99da4acd4597",
                                      ("Solarize", False, 100): "ba7984b93503e6af",
                                      ("Rotate", True, 64): "93a557dc9bd78377"},
    "torch=2.14.1+cu130 cpu=DEFAULT": {("TranslateX", False, 64): "66b0502ec74995e7",
                                       ("TranslateX", False, 100): "604ad4dba342e7e8",
                                       ("ShearX", False, 64): "086c2d8cc2057d20",
                                       ("Solarize", False, 100): "fd76d84a764d2976",
                                       ("Rotate", True, 64): "5749f34180a2d9ff"},
}


@pytest.mark.parametrize("reference", sorted(_LINSPACE_GOLDENS))
def test_the_magnitude_bins_follow_each_torchs_linspace(reference, torch_reference_restored):
    import hashlib
    import struct
    name = _ringfeed._set_torch_reference(reference)
    assert name.startswith("torch ")
    for (op, wide, bins), digest in _LINSPACE_GOLDENS[reference].items():
        ours = _ringfeed._augment_magnitudes(op, bins, 224, 224, wide)
        assert hashlib.sha256(struct.pack(f"<{bins}f", *ours)).hexdigest()[:16] == digest, (reference, op, bins)


def test_a_torch_reference_that_cannot_be_followed_is_refused(torch_reference_restored):
    with pytest.raises(ValueError, match="AVX2 only"):
        _ringfeed._set_torch_reference("torch=1.13.1 cpu=AVX512")
    with pytest.raises(ValueError, match="expected 'torch=<version>"):
        _ringfeed._set_torch_reference("2.14")


@pytest.mark.parametrize("bins", [10, 31, 5, 64, 2, 17, 100])
@pytest.mark.parametrize("w, h", [(224, 224), (451, 300), (7, 5)])
def test_augment_magnitude_bins_equal_torchvisions_float32_tables(bins, w, h):
    import torchvision.transforms.autoaugment as A
    ra = A.RandAugment(num_magnitude_bins=bins)
    tw = A.TrivialAugmentWide(num_magnitude_bins=bins)
    RT.follow_installed_torch()  # the arithmetic of this torch, on this CPU
    for wide, space in ((False, ra._augmentation_space(bins, (h, w))), (True, tw._augmentation_space(bins))):
        for name, (magnitudes, _) in space.items():
            if magnitudes.ndim == 0:
                continue
            ours = _ringfeed._augment_magnitudes(name, bins, w, h, wide)
            assert ours == [float(m) for m in magnitudes.tolist()], (name, wide)


def _apply_our_draws(spec, position, img_path, index, interpolation, fill):
    """torchvision's _apply_op run with the ops and magnitudes ringfeed drew."""
    import numpy as np
    from PIL import Image
    import torchvision.transforms.autoaugment as A
    with Image.open(img_path) as im:
        ref = TV.Resize((37, 29))(im.convert("RGB"))
    draws = _ringfeed._transform_draws(spec, position, ref.width, ref.height, 3, 11, 0, index)
    ops = [(_AUG_NAMES[int(draws[k])], draws[k + 1]) for k in range(0, len(draws), 2)]
    for name, magnitude in ops:
        ref = A._apply_op(ref, name, magnitude, interpolation=interpolation, fill=fill)
    return torch.from_numpy(np.array(ref)), ops


@needs_torchvision
@pytest.mark.parametrize("make", [
    lambda T: T.AutoAugment(T.AutoAugmentPolicy.IMAGENET),
    lambda T: T.AutoAugment(T.AutoAugmentPolicy.CIFAR10, fill=[10, 20, 30]),
    lambda T: T.AutoAugment(T.AutoAugmentPolicy.SVHN, interpolation=T.InterpolationMode.BILINEAR),
    lambda T: T.RandAugment(),
    lambda T: T.RandAugment(num_ops=3, magnitude=5, num_magnitude_bins=10, fill=[128, 128, 128]),
    lambda T: T.TrivialAugmentWide(),
    lambda T: T.TrivialAugmentWide(interpolation=T.InterpolationMode.BILINEAR, fill=[0, 255, 0]),
], ids=["aa_imagenet", "aa_cifar10_fill", "aa_svhn_bilinear", "ra", "ra_3_5_10_fill", "ta_wide", "ta_wide_bilinear"])
def test_augment_pixels_equal_torchvisions_apply_op_for_the_drawn_ops(make):
    t = make(TV)
    spec = RT.to_spec([TV.Resize((37, 29)), t])
    path = os.path.join(R.DATA, "photos/chelsea.jpg")
    data = _read("photos/chelsea.jpg")
    seen = set()
    for index in range(40):
        ref, ops = _apply_our_draws(spec, 1, path, index, t.interpolation, t.fill)
        got = ringfeed.decode(data, transform=spec, exact=True, seed=11, index=index)
        assert torch.equal(got, ref), f"sample {index}: {ops}"
        seen.update(name for name, _ in ops)
    assert len(seen) >= 6, seen  # the samples exercised many ops


def _freq(names):
    out = {}
    for n in names:
        out[n] = out.get(n, 0) + 1
    return out


@needs_torchvision
def test_augment_op_choices_follow_torchvisions_draws():
    import torchvision.transforms.autoaugment as A
    torch.manual_seed(3)
    # RandAugment: num_ops draws of torch.randint(len(op_meta)), as its forward
    ra = A.RandAugment()
    names = list(ra._augmentation_space(31, (32, 32)).keys())
    theirs = [names[int(torch.randint(len(names), (1,)).item())] for _ in range(N)]
    spec = RT.to_spec([RT.RandAugment(num_ops=1)])
    ours = [_AUG_NAMES[int(_ringfeed._transform_draws(spec, 0, 32, 32, 3, 1, 0, i)[0])] for i in range(N)]
    f_ours, f_theirs = _freq(ours), _freq(theirs)
    assert set(f_ours) == set(f_theirs) == set(names)
    for n in names:  # each op ~ N/14 in both
        assert abs(f_ours[n] - f_theirs[n]) < 6 * math.sqrt(N / 14), (n, f_ours[n], f_theirs[n])
    # AutoAugment: policy ids uniform over its 25 sub-policies, steps kept with their p
    aa = A.AutoAugment()
    theirs = []
    for _ in range(N):
        pid, probs, signs = aa.get_params(len(aa.policies))
        theirs += [name for i, (name, p, _) in enumerate(aa.policies[pid]) if probs[i] <= p]
    spec = RT.to_spec([RT.AutoAugment()])
    ours = []
    for i in range(N):
        d = _ringfeed._transform_draws(spec, 0, 32, 32, 3, 1, 0, i)
        ours += [_AUG_NAMES[int(d[k])] for k in range(0, len(d), 2)]
    f_ours, f_theirs = _freq(ours), _freq(theirs)
    assert set(f_ours) == set(f_theirs)
    for n in f_theirs:
        assert abs(f_ours[n] - f_theirs[n]) < 6 * math.sqrt(max(f_theirs[n], 30)), (n, f_ours[n], f_theirs[n])


@needs_torchvision
@pytest.mark.parametrize("case", ["crop", "rotation", "affine", "jitter", "blur"])
def test_more_draws_follow_torchvisions_get_params(case):
    from PIL import Image
    w, h = 300, 200
    img = Image.new("RGB", (w, h))
    torch.manual_seed(4)
    if case == "crop":
        spec = RT.to_spec([RT.RandomCrop((120, 70))])
        theirs = [TV.RandomCrop.get_params(img, (120, 70)) for _ in range(N)]
    elif case == "rotation":
        spec = RT.to_spec([RT.RandomRotation((-30, 45))])
        theirs = [(TV.RandomRotation.get_params([-30.0, 45.0]),) for _ in range(N)]
    elif case == "affine":
        spec = RT.to_spec([RT.RandomAffine(20, translate=(0.1, 0.3), scale=(0.8, 1.2), shear=(-5, 5, -10, 10))])
        theirs = []
        for _ in range(N):
            a, (tx, ty), s, (sx, sy) = TV.RandomAffine.get_params([-20.0, 20.0], [0.1, 0.3], [0.8, 1.2],
                                                                   [-5.0, 5.0, -10.0, 10.0], [w, h])
            theirs.append((a, tx, ty, s, sx, sy))
    elif case == "jitter":
        spec = RT.to_spec([RT.ColorJitter(0.4, 0.3, 0.2, 0.1)])
        j = TV.ColorJitter(0.4, 0.3, 0.2, 0.1)
        theirs = []
        for _ in range(N):
            order, b, c, s, hh = j.get_params(j.brightness, j.contrast, j.saturation, j.hue)
            theirs.append(tuple(float(k) for k in order.tolist()) + (b, c, s, hh))
    else:
        spec = RT.to_spec([RT.GaussianBlur(5, sigma=(0.1, 2.0))])
        theirs = [(TV.GaussianBlur.get_params(0.1, 2.0),) for _ in range(N)]
    ours = _ours(spec, w, h)
    assert len(ours[0]) == len(theirs[0])
    for k in range(len(theirs[0])):
        d = _ks([o[k] for o in ours], [t[k] for t in theirs])
        assert d < KS_CRITICAL, f"{case} component {k}: KS {d:.4f} >= {KS_CRITICAL:.4f}"


@needs_torchvision
def test_trivial_augment_draws_follow_torchvisions_forward():
    import torchvision.transforms.autoaugment as A
    ta = A.TrivialAugmentWide()
    space = ta._augmentation_space(31)
    names = list(space.keys())
    torch.manual_seed(5)
    theirs = []
    for _ in range(N):  # TrivialAugmentWide.forward's draws
        name = names[int(torch.randint(len(space), (1,)).item())]
        magnitudes, signed = space[name]
        m = float(magnitudes[torch.randint(len(magnitudes), (1,), dtype=torch.long)].item()) \
            if magnitudes.ndim > 0 else 0.0
        if signed and torch.randint(2, (1,)):
            m *= -1.0
        theirs.append((name, m))
    spec = RT.to_spec([RT.TrivialAugmentWide()])
    ours = []
    for i in range(N):
        d = _ringfeed._transform_draws(spec, 0, 64, 64, 3, 2, 0, i)
        ours.append((_AUG_NAMES[int(d[0])], d[1]))
    for name in names:
        a = [m for n, m in ours if n == name]
        b = [m for n, m in theirs if n == name]
        assert abs(len(a) - len(b)) < 6 * math.sqrt(N / len(names)), name
        if space[name][0].ndim > 0:
            d = _ks(a, b)
            assert d < 1.95 * math.sqrt(2 / min(len(a), len(b))), f"{name}: KS {d:.4f}"
