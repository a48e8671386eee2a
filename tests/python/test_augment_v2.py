"""torchvision.transforms.v2's RandomAffine, AutoAugment, RandAugment,
TrivialAugmentWide and AugMix (issue 42): on PIL images v2 rewrote the
inverse affine matrix's double arithmetic (a pixel of an odd-sized image
moves by one) and scales Solarize's magnitude from a fraction; after
ToImage (and in AugMix's chains, always) they run v2's tensor kernels. Each v2 object translates to its "v2.<name>" op, whose
pixels equal torchvision 0.29's for the draws ringfeed made: live where v2
is installed, and from the committed goldens (made under torchvision 0.29,
with that torch's magnitude bins and grid arithmetic) anywhere."""
import json
import os

import pytest
import torch

import ringfeed
import ringfeed.transforms as RT
from ringfeed import _ringfeed

import transform_recipes as R
import v2_recipes as V

with open(R.AUGMENT_V2_GOLDENS) as f:
    GOLDENS = json.load(f)
RECIPES = sorted(k for k in GOLDENS if not k.startswith("_"))

try:
    from torchvision.transforms import v2
    LIVE = V.v2_augment_recipes(v2) if hasattr(v2, "ToImage") else None
except ImportError:  # torchvision 0.14: no v2; the goldens still hold
    LIVE = None
needs_v2 = pytest.mark.skipif(LIVE is None, reason="torchvision.transforms.v2 (0.16 or later) is not installed; "
                                                   "the goldens cover the bytes")


def _read(img):
    with open(os.path.join(R.DATA, img), "rb") as f:
        return f.read()


def _spec(op_spec, size):
    return f"Resize(({size[0]}, {size[1]})); {op_spec}"


def _indices(size, img):
    return V.aug_indices(size, img, R.IMAGES)


def _ours(spec, img, indices):
    data = _read(img)
    return [ringfeed.decode(data, transform=spec, exact=True, seed=11, index=i, name=img) for i in indices]


def _draws(spec, index):
    return lambda w, h, c: _ringfeed._transform_draws(spec, 1, w, h, c, 11, 0, index)


@pytest.mark.parametrize("rid", RECIPES)
def test_each_v2_augment_recipe_gives_its_goldens_bytes(rid, torch_reference_restored):
    # the magnitude bins of the torch the goldens were made with
    _ringfeed._set_torch_reference(GOLDENS["_torch_reference"])
    for size in V.AUG_SIZES:
        spec = _spec(GOLDENS[rid]["spec"], size)
        for img in R.IMAGES:
            got = torch.stack(_ours(spec, img, _indices(size, img)))
            assert R.digest(got) == GOLDENS[rid]["digests"][f"{size[0]}x{size[1]}"][img], f"{rid} {size} on {img}"
    for size in V.AUG_TENSOR_SIZES if rid in V.AUG_TENSOR else ():
        spec = V.tensor_spec(GOLDENS[rid]["spec"], size)
        for img in R.IMAGES:
            got = torch.stack(_ours(spec, img, _indices(size, img)))
            assert R.digest(got) == GOLDENS[rid]["tensor_digests"][f"{size[0]}x{size[1]}"][img], \
                f"{rid} on a tensor {size} on {img}"


@needs_v2
@pytest.mark.parametrize("rid", sorted(LIVE or {}))
def test_v2_augment_pixels_equal_torchvisions_for_ringfeeds_draws(rid):
    if rid.startswith("augmix") and R.without_vector_unit():
        pytest.skip(R.without_vector_unit())
    t = LIVE[rid]
    op_spec = RT.to_spec([t])
    assert op_spec.startswith("v2." + type(t).__name__ + "(")
    assert op_spec == GOLDENS[rid]["spec"]
    seen = set()
    for size in V.AUG_SIZES:
        spec = _spec(op_spec, size)
        for img in R.IMAGES:
            for index, got in zip(_indices(size, img), _ours(spec, img, _indices(size, img))):
                want, ops = V.v2_augment_reference(t, os.path.join(R.DATA, img), size, _draws(spec, index))
                assert got.shape == want.shape and torch.equal(got, want), f"{rid} {size} {img} #{index}: {ops}"
                seen.update(name for name, _ in ops)
    if rid.startswith(("ra", "ta")):  # every op of their space was drawn and compared
        assert seen == set(V.AUG_NAMES) - {"Invert"}, seen
    elif rid.startswith("aa"):
        assert len(seen) >= 8, seen


@needs_v2
@pytest.mark.parametrize("rid, op", [("affine_bilinear", "affine"), ("ta_wide", "Solarize"), ("ra", "Solarize"),
                                     ("aa_imagenet", "Solarize")])
def test_v1s_arithmetic_would_differ_from_v2s(rid, op):
    # the same draws through v1's op: RandomAffine with v1's inverse matrix
    # moves some bilinear pixel; the policies' Solarize with v1's bins
    # (linspace(255, 0) vs 255 * linspace(1, 0)) flips some threshold. (The
    # policies' shears are about (0, 0) and their translations whole pixels:
    # there v1's and v2's matrices are bit-identical.) So the parity test
    # above fails with v1's arithmetic.
    t = LIVE[rid]
    op_spec = RT.to_spec([t])
    checked = differ = 0
    for size in V.AUG_SIZES:
        spec_v1 = _spec(op_spec[len("v2."):], size)
        for img in R.IMAGES:
            for index, got in zip(_indices(size, img), _ours(spec_v1, img, _indices(size, img))):
                want, ops = V.v2_augment_reference(t, os.path.join(R.DATA, img), size, _draws(spec_v1, index))
                if op in {name for name, _ in ops}:
                    checked += 1
                    differ += not torch.equal(got, want)
    assert checked > 0 and differ > 0, (checked, differ)


def test_the_v2_spec_names_round_trip_and_are_no_ringfeed_classes():
    for name in ("v2.RandomAffine(10)", "v2.TrivialAugmentWide()", "v2.RandAugment(num_ops=1)",
                 "v2.AutoAugment(policy=svhn)"):
        once = _ringfeed._transform_spec(name)
        assert once.startswith(name.split("(")[0] + "(") and _ringfeed._transform_spec(once) == once
    assert not any("." in n for n in RT.__all__)


@needs_v2
@pytest.mark.parametrize("rid", V.AUG_TENSOR)
def test_v2_augment_on_a_uint8_tensor_equals_torchvisions_for_ringfeeds_draws(rid):
    # after ToImage: v2's tensor kernels (grid_sample and its fill blend,
    # _blend, ...), every op of the policies; RandomAffine's affine_image,
    # RandomRotation's rotate_image
    if rid not in ("affine", "affine_fill_center", "rotation", "rotation_quarter_fill") and R.without_vector_unit():
        pytest.skip(R.without_vector_unit())  # the nearest ones hold there
    t = LIVE[rid]
    seen = set()
    for size in V.AUG_TENSOR_SIZES:
        spec = V.tensor_spec(RT.to_spec([t]), size)
        assert RT.output_of(spec)[0] == "uint8"
        for img in R.IMAGES:
            for index, got in zip(_indices(size, img), _ours(spec, img, _indices(size, img))):
                want, ops = V.v2_augment_reference(t, os.path.join(R.DATA, img), size,
                                                   lambda w, h, c, i=index: _ringfeed._transform_draws(
                                                       spec, 2, w, h, c, 11, 0, i), tensor=True)
                assert got.shape == want.shape and torch.equal(got, want), f"{rid} {size} {img} #{index}: {ops}"
                seen.update(name for name, _ in ops)
    if rid.startswith(("ra", "ta")):
        assert seen == set(V.AUG_NAMES) - {"Invert"}, seen


@needs_v2
def test_what_v2_runs_on_a_uint8_tensor_that_ringfeed_does_not_is_refused():
    with pytest.raises(ValueError, match=r"RandomAffine on a uint8 tensor takes nearest or bilinear"):
        RT.output_of([v2.ToImage(), v2.RandomAffine(10, interpolation=v2.InterpolationMode.BICUBIC)])
    with pytest.raises(ValueError, match=r"RandomRotation on a uint8 tensor with expand=True is not run by ringfeed"):
        RT.output_of([v2.ToImage(), v2.RandomRotation(10, expand=True)])
    # v1's RandomAffine stays on PIL images (v1 on a tensor is v1's matrix)
    with pytest.raises(ValueError, match=r"RandomAffine expects a PIL image"):
        RT.output_of("ToImage(); RandomAffine(10)")
    with pytest.raises(ValueError, match=r"RandAugment on a uint8 tensor takes nearest or bilinear"):
        RT.output_of([v2.ToImage(), v2.RandAugment(interpolation=v2.InterpolationMode.BICUBIC)])
    # v1's policies stay on PIL images (v1 on a tensor is torch 1.13's arithmetic)
    with pytest.raises(ValueError, match=r"TrivialAugmentWide expects a PIL image"):
        RT.output_of("ToImage(); TrivialAugmentWide()")


@needs_v2
@pytest.mark.parametrize("where", ["pil", "tensor"])
def test_the_dataloader_runs_v2_trivial_augment_batch_for_batch_as_torch(train_dir, where):
    # strict: no fallback. torch's side: the same generator's order (torch's
    # sampler), each sample through v2's ops with TrivialAugmentWide's draws
    # pinned to the ones ringfeed made for that (seed, epoch, position).
    # "tensor": the train snippet's tail (ToImage, TrivialAugmentWide,
    # ToDtype, Normalize) after a Resize standing in for its crop
    if where == "tensor" and R.without_vector_unit():
        pytest.skip(R.without_vector_unit())  # and ringfeed.DataLoader falls back: test_cpu_capability.py
    import torchvision.datasets as datasets
    import warnings
    size, seed = (29, 37), 5
    ta = v2.TrivialAugmentWide(interpolation=v2.InterpolationMode.BILINEAR)
    if where == "pil":
        ops, position, tail = [v2.Resize(size), ta, v2.PILToTensor()], 1, None
    else:
        tail = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize((0.485, 0.456, 0.406),
                                                                              (0.229, 0.224, 0.225))])
        ops, position = [v2.Resize(size), v2.ToImage(), ta] + list(tail.transforms), 2
    dataset = datasets.ImageFolder(train_dir, transform=v2.Compose(ops))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = ringfeed.DataLoader(dataset, batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(3),
                                   exact=True, seed=seed, strict=True)
    assert ours.backend == "ringfeed"
    got = [(images.clone(), labels.clone()) for images, labels in ours]
    order = [int(i) for batch in torch.utils.data.DataLoader(range(len(dataset)), batch_size=8, shuffle=True,
                                                              generator=torch.Generator().manual_seed(3))
             for i in batch]
    spec = RT.to_spec(dataset.transform)
    assert spec.split("; ")[position].startswith("v2.TrivialAugmentWide(")
    want, seen = [], set()
    for p, index in enumerate(order):
        path, label = dataset.samples[index]
        img, ops_drawn = V.v2_augment_reference(
            ta, path, size, lambda w, h, c, p=p: _ringfeed._transform_draws(spec, position, w, h, c, seed, 0, p),
            tensor=where == "tensor")
        want.append((img.permute(2, 0, 1) if where == "pil" else tail(img), label))
        seen.update(name for name, _ in ops_drawn)
    assert len(got) == (len(want) + 7) // 8 and len(seen) >= 8, seen
    for k, (images, labels) in enumerate(got):
        chunk = want[8 * k:8 * k + 8]
        assert labels.tolist() == [label for _, label in chunk], f"batch {k}"
        expected = torch.stack([img for img, _ in chunk])
        assert images.dtype == expected.dtype and torch.equal(images, expected), f"batch {k}"
