"""AugMix natively: pixels bit-identical to torchvision 0.14's forward on
PIL images with its draws pinned to ringfeed's (committed goldens, and
torchvision itself where installed), its draws' distributions against
torchvision's own draw code, and its errors."""
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
needs_vector_unit = pytest.mark.skipif(R.without_vector_unit() is not None, reason=str(R.without_vector_unit()))

with open(R.AUGMIX_GOLDENS) as f:
    GOLDENS = json.load(f)

SEED = 11
NAMES = ["ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Posterize", "Solarize", "AutoContrast",
         "Equalize", "Brightness", "Color", "Contrast", "Sharpness"]


def _spec(case):
    before, augmix, after = case
    return RT.to_spec(before + [augmix] + after)


def _read(img):
    with open(os.path.join(R.DATA, img), "rb") as f:
        return f.read()


# The goldens of every torch they were made with (make_transform_goldens.py),
# checked under that torch's arithmetic whichever torch is installed.
@pytest.mark.parametrize("reference", sorted(GOLDENS))
@pytest.mark.parametrize("rid", sorted(R.augmix_recipes(RT, torch)))
def test_augmix_is_bit_identical_to_its_golden_on_every_format(rid, reference, torch_reference_restored):
    RT.follow_installed_torch()  # now, so that translating below keeps `reference`
    _ringfeed._set_torch_reference(reference)
    spec = _spec(R.augmix_recipes(RT, torch)[rid])
    for img in R.IMAGES:
        data = _read(img)
        for index in R.AUGMIX_SAMPLES:
            got = ringfeed.decode(data, transform=spec, exact=True, seed=SEED, index=index, name=img)
            assert R.digest(got) == GOLDENS[reference][rid][img][index], f"{rid} on {img}, sample {index}"


@needs_vector_unit
@needs_torchvision
@pytest.mark.parametrize("rid", sorted(R.augmix_recipes(RT, torch)))
def test_augmix_equals_torchvisions_forward_with_ringfeeds_draws(rid):
    case = R.augmix_recipes(TV, torch)[rid]
    spec = _spec(case)
    position = len(case[0])
    for img in R.IMAGES:
        data = _read(img)
        for index in R.AUGMIX_SAMPLES:
            ref = R.augmix_reference(case, os.path.join(R.DATA, img), lambda w, h, c: _ringfeed._transform_draws(
                spec, position, w, h, c, SEED, 0, index))
            got = ringfeed.decode(data, transform=spec, exact=True, seed=SEED, index=index, name=img)
            assert got.dtype == ref.dtype and got.shape == ref.shape, f"{rid} on {img}"
            assert torch.equal(got, ref), f"{rid} on {img}, sample {index}: max diff " \
                                          f"{(got.double() - ref.double()).abs().max()}"


@needs_vector_unit
@needs_torchvision
def test_the_chains_cover_every_op_and_large_images():
    """More samples than the goldens, on a photo-sized image (Contrast's
    float32 mean past 2^24), so every op of the space runs in a chain."""
    case = ([TV.Resize((300, 451))], TV.AugMix(severity=10), [])
    spec = _spec(case)
    path = os.path.join(R.DATA, "photos/chelsea.jpg")
    data = _read("photos/chelsea.jpg")
    seen = set()
    for index in range(24):
        draws = _ringfeed._transform_draws(spec, 1, 451, 300, 3, SEED, 0, index)
        seen.update(_ops_of(draws, 3, -1))
        ref = R.augmix_reference(case, path, lambda w, h, c: draws)
        got = ringfeed.decode(data, transform=spec, exact=True, seed=SEED, index=index)
        assert torch.equal(got, ref), f"sample {index}"
    assert seen == set(NAMES), set(NAMES) - seen


def _labelled(draws, width, depth):
    """A draw list's randint values (see augmix_reference for its layout)
    as (kind, value): ("depth", 1..3) when drawn, ("op", name), ("bin", k)
    for ops with magnitudes, ("sign", 0|1) for signed ops."""
    ints = [int(v) for v in draws[2 + width:]]
    out, k = [], 0
    for _ in range(width):
        steps = depth
        if depth <= 0:
            steps = ints[k]
            out.append(("depth", steps))
            k += 1
        for _ in range(steps):
            op = ints[k]
            out.append(("op", NAMES[op]))
            k += 1
            if op not in (7, 8):  # AutoContrast and Equalize have no magnitudes
                out.append(("bin", ints[k]))
                k += 1
            if op <= 4 or op >= 9:  # the geometric and the enhance ops are signed
                out.append(("sign", ints[k]))
                k += 1
    assert k == len(ints)
    return out


def _ops_of(draws, width, depth):
    return [name for kind, name in _labelled(draws, width, depth) if kind == "op"]


# --- draws: torchvision's distributions -------------------------------------------

N = R.N
KS_CRITICAL = R.KS_CRITICAL
_ks = R.ks


@needs_torchvision
@pytest.mark.parametrize("alpha, width", [(1.0, 3), (0.5, 4), (3.0, 2)])
def test_the_mixing_weights_follow_torchs_dirichlet(alpha, width):
    spec = RT.to_spec(RT.AugMix(mixture_width=width, alpha=alpha, chain_depth=1))
    ours = [_ringfeed._transform_draws(spec, 0, 32, 32, 3, 7, 0, i) for i in range(N)]
    torch.manual_seed(2)
    m = torch._sample_dirichlet(torch.tensor([alpha, alpha]).expand(N, -1))
    chains = torch._sample_dirichlet(torch.tensor([alpha] * width).expand(N, -1))
    assert _ks([d[0] for d in ours], m[:, 0].tolist()) < KS_CRITICAL
    for k in range(width):
        assert _ks([d[2 + k] for d in ours], chains[:, k].tolist()) < KS_CRITICAL, k
    for d in ours:  # each a Dirichlet sample in float32: positive, summing to 1
        assert 0 < d[0] < 1 and abs(d[0] + d[1] - 1) < 1e-6
        assert abs(sum(d[2:2 + width]) - 1) < 1e-5


@needs_torchvision
@pytest.mark.parametrize("all_ops", [True, False])
def test_chain_depths_ops_bins_and_signs_follow_torchvisions_forward(all_ops):
    import torchvision.transforms.autoaugment as A
    severity, width = 4, 3
    aug = A.AugMix(severity=severity, mixture_width=width, all_ops=all_ops)
    space = aug._augmentation_space(10, (32, 32))
    names = list(space.keys())
    torch.manual_seed(6)
    theirs = []
    for _ in range(N // 10):  # forward()'s randint draws, in its order
        for _ in range(width):
            depth = int(torch.randint(low=1, high=4, size=(1,)).item())
            theirs.append(("depth", depth))
            for _ in range(depth):
                name = names[int(torch.randint(len(space), (1,)).item())]
                magnitudes, signed = space[name]
                theirs.append(("op", name))
                if magnitudes.ndim > 0:
                    theirs.append(("bin", int(torch.randint(severity, (1,), dtype=torch.long))))
                if signed:
                    theirs.append(("sign", int(torch.randint(2, (1,)))))
    spec = RT.to_spec(RT.AugMix(severity=severity, mixture_width=width, all_ops=all_ops))
    ours = []
    for i in range(N // 10):
        ours += _labelled(_ringfeed._transform_draws(spec, 0, 32, 32, 3, 7, 0, i), width, -1)
    f_ours, f_theirs = {}, {}
    for table, draws in ((f_ours, ours), (f_theirs, theirs)):
        for key in draws:
            table[key] = table.get(key, 0) + 1
    assert set(f_ours) == set(f_theirs)
    assert {v for kind, v in f_ours if kind == "op"} == set(names)
    for key, n in f_theirs.items():
        assert abs(f_ours[key] - n) < 6 * math.sqrt(max(n, 30)), (key, f_ours[key], n)


def test_draws_and_pixels_depend_only_on_seed_epoch_and_index():
    spec = RT.to_spec([RT.Resize((40, 30)), RT.AugMix()])
    data = _read("photos/chelsea.jpg")
    a = ringfeed.decode(data, transform=spec, exact=True, seed=3, epoch=1, index=5)
    assert torch.equal(a, ringfeed.decode(data, transform=spec, exact=True, seed=3, epoch=1, index=5))
    others = [ringfeed.decode(data, transform=spec, exact=True, seed=s, epoch=e, index=i)
              for s, e, i in ((4, 1, 5), (3, 2, 5), (3, 1, 6))]
    assert all(not torch.equal(a, o) for o in others)


# --- errors ------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, words", [
    ({"severity": 0}, "severity"), ({"severity": 11}, "severity"), ({"mixture_width": 0}, "mixture_width"),
    ({"alpha": 0.0}, "alpha"), ({"fill": 300}, "fill"), ({"fill": [1, -2, 3]}, "fill"),
    ({"interpolation": RT.InterpolationMode.BICUBIC}, "nearest or bilinear"),
])
def test_bad_arguments_are_value_errors_naming_them(kwargs, words):
    with pytest.raises(ValueError, match=words):
        RT.AugMix(**kwargs)


def test_a_fill_that_does_not_fit_the_image_names_the_op():
    spec = RT.to_spec([RT.Resize((20, 20)), RT.AugMix(fill=[1, 2])])
    with pytest.raises(ValueError, match=r"AugMix: fill has 2 values for .*3 channels"):
        ringfeed.decode(_read("photos/chelsea.jpg"), transform=spec, exact=True)
