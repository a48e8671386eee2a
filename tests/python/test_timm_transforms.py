"""timm's training transforms (issue 42): timm.data.create_transform(
is_training=True)'s objects translate from their attributes and run
natively. Bytes: for ringfeed's draws, timm's own RandAugment / AutoAugment
/ AugMixAugment objects replayed on them (timm_recipes.replay) give
ringfeed's pixels, live where timm is installed and from the committed
goldens everywhere. Draws: ringfeed's follow timm's rules (op choice,
probabilities, magnitude noise and clipping, inc1 signs, filter choice,
erasing count/area/aspect), compared with timm's own draws, live or
committed; each comparison is shown to fail when one rule is changed."""
import json
import math
import os

import pytest
import torch

import ringfeed
import ringfeed.transforms as RT
from ringfeed import _ringfeed

import timm_draws as D
import timm_recipes as TR
import transform_recipes as R

GOLDENS_PATH = os.path.join(R.DATA, "transforms", "timm_goldens.json")
with open(GOLDENS_PATH) as f:
    GOLDENS = json.load(f)

try:
    import timm.data
    import timm.data.auto_augment as AA
    import timm.data.random_erasing as RE
    LIVE = TR.augment_recipes(timm.data)
except ImportError:  # timm is in the torch 2.x venv only; the goldens hold its bytes and draws
    LIVE = None
needs_timm = pytest.mark.skipif(LIVE is None, reason="timm is not installed (the torch 2.x venv has it); "
                                                     "the goldens cover its bytes and draws")
AUGMENTS = sorted(GOLDENS["augment"])
N_DRAWS = 4000


def _read(img):
    with open(os.path.join(R.DATA, img), "rb") as f:
        return f.read()


def _full(spec):
    return TR.BEFORE + "; " + spec


@pytest.mark.parametrize("rid", AUGMENTS)
def test_each_timm_augment_gives_the_goldens_bytes_for_ringfeeds_draws(rid):
    spec = _full(GOLDENS["augment"][rid]["spec"])
    applied = set()
    for j, img in enumerate(R.IMAGES):
        data = _read(img)
        for k in range(len(TR.SAMPLES)):
            index = TR.sample_index(j, k)
            got = ringfeed.decode(data, transform=spec, exact=True, seed=TR.SEED, index=index, name=img)
            assert R.digest(got) == GOLDENS["augment"][rid]["digests"][img][k], f"{rid} on {img}, sample {index}"
            applied.update(op[0] for op in _sample(rid, _ringfeed._transform_draws(spec, 1, 56, 56, 3, TR.SEED, 0,
                                                                                   index)))
    names = set(D.op_names(spec))
    if GOLDENS["augment"][rid]["kind"] == "AutoAugment" or "choice_weights=(" in spec:
        assert len(applied) >= 0.6 * len(names), applied  # most of a policy's ops or of the weighted ones
    else:
        assert applied == names  # every op of a RandAugment or AugMix ran on some image


@needs_timm
@pytest.mark.parametrize("rid", AUGMENTS)
def test_each_timm_augment_translates_and_equals_timms_own_object_replayed(rid):
    import numpy as np
    import torchvision.transforms as T
    from PIL import Image
    obj = LIVE[rid]
    spec = RT.to_spec(obj)
    assert spec == GOLDENS["augment"][rid]["spec"]
    full = _full(spec)
    for img in R.IMAGES[:7]:
        with Image.open(os.path.join(R.DATA, img)) as im:
            before = T.Resize((56, 56))(im.convert("RGB"))
        for k in range(len(TR.SAMPLES)):
            index = TR.sample_index(R.IMAGES.index(img), k)
            record = _ringfeed._transform_draws(full, 1, 56, 56, 3, TR.SEED, 0, index)
            want = torch.from_numpy(np.array(TR.replay(AA, obj, before, record)))
            got = ringfeed.decode(_read(img), transform=full, exact=True, seed=TR.SEED, index=index, name=img)
            assert torch.equal(got, want), f"{rid} on {img}, sample {index}: " \
                                           f"{(got.int() - want.int()).abs().max()} off"


def _sample(rid, record, spec=None):
    """The [name, arg, filter] of each op one record of recipe `rid` applied."""
    spec = spec or GOLDENS["augment"][rid]["spec"]
    kind = GOLDENS["augment"][rid]["kind"]
    names = D.op_names(spec)
    width = 0
    if kind == "AutoAugment":  # the sub-policies' names, in order
        subs = spec[spec.index("policy=[") + 8:].split("], [")
        names = [D.op_names(s) for s in subs]
    if kind == "AugMix":
        width = int(spec.split("width=")[1].split(",")[0])
    return D.ringfeed_augment_sample(names, record, kind, width)


def _ours(rid, spec=None, n=N_DRAWS):
    spec = spec or GOLDENS["augment"][rid]["spec"]
    return [_sample(rid, _ringfeed._transform_draws(spec, 0, 56, 56, 3, 5, 0, i), spec) for i in range(n)]


DRAW_CASES = sorted(GOLDENS["draws"])


@pytest.mark.parametrize("rid", DRAW_CASES)
def test_ringfeeds_draws_follow_timms_rules(rid):
    theirs = GOLDENS["draws"][rid]
    assert D.differences(_ours(rid), theirs) == []


@needs_timm
@pytest.mark.parametrize("rid", DRAW_CASES)
def test_the_committed_draws_are_timms_own(rid):
    from PIL import Image
    live = D.timm_augment_samples(AA, LIVE[rid], N_DRAWS, 99, Image.new("RGB", (8, 8)))
    assert D.differences(live, GOLDENS["draws"][rid]) == []


# Each rule changed in the spec ringfeed runs: the comparison must see it.
PERTURBED = {
    "probability": ("rand_m9_mstd05_inc1_random", "prob=0.5", "prob=0.6"),
    "magnitude noise": ("rand_m9_mstd05_inc1_random", "magnitude_std=0.5", "magnitude_std=1.0"),
    "magnitude": ("rand_m9_mstd05_inc1_random", "magnitude=9.0", "magnitude=8.0"),
    "inc1 ops": ("rand_m9_mstd05_inc1_random", "'ColorIncreasing'", "'Color'"),
    "filters": ("rand_m9_mstd05_inc1_random", "interpolation=('bilinear', 'bicubic')", "interpolation=('bicubic',)"),
    "clipping": ("rand_weights_mmax", "magnitude_max=15.0", "magnitude_max=None"),
    "weights": ("rand_weights_mmax", "choice_weights=(", "choice_weights=(0.01, "),
    "augmix depth": ("augmix_default_random", "depth=-1", "depth=2"),
}


@pytest.mark.parametrize("rule", sorted(PERTURBED))
def test_the_draw_comparison_fails_when_a_rule_is_changed(rule):
    rid, old, new = PERTURBED[rule]
    spec = GOLDENS["augment"][rid]["spec"]
    assert old in spec
    changed = spec.replace(old, new)
    if rule == "weights":  # one weight more: drop the last one
        head, tail = changed.split("choice_weights=(")
        weights = tail.split(")")[0].split(", ")
        changed = head + "choice_weights=(" + ", ".join(weights[:-1]) + ")" + tail.split(")", 1)[1]
    assert D.differences(_ours(rid, changed), GOLDENS["draws"][rid]) != []


def _erasing_spec(rid):
    return GOLDENS["erasing"][rid]["spec"]


def _our_boxes(spec, height=48, width=40, n=N_DRAWS):
    return [D.ringfeed_erasing_sample(_ringfeed._transform_draws(spec, 0, width, height, 3, 5, 0, i))
            for i in range(n)]


@pytest.mark.parametrize("rid", sorted(GOLDENS["erasing"]))
def test_erasing_boxes_follow_timms_rules(rid):
    assert D.erasing_differences(_our_boxes(_erasing_spec(rid)), GOLDENS["erasing"][rid]["boxes"]) == []


@needs_timm
@pytest.mark.parametrize("rid", sorted(GOLDENS["erasing"]))
def test_erasing_translates_and_the_committed_boxes_are_timms(rid):
    obj = TR.erasing_recipes(RE)[rid]
    assert RT.to_spec(obj) == _erasing_spec(rid)
    live = D.timm_erasing_samples(RE, obj, N_DRAWS, 99, 48, 40)
    assert D.erasing_differences(live, GOLDENS["erasing"][rid]["boxes"]) == []


@pytest.mark.parametrize("old,new", [("max_count=3", "max_count=2"), ("min_area=0.02", "min_area=0.05"),
                                     ("log_aspect_ratio=(-1.2039728043259361, 1.2039728043259361)",
                                      "log_aspect_ratio=(-0.6931471805599453, 0.6931471805599453)"),
                                     ("probability=0.5", "probability=0.6")])
def test_the_erasing_comparison_fails_when_a_rule_is_changed(old, new):
    spec = _erasing_spec("const_count3")
    assert old in spec
    if old.startswith("probability"):  # erasing or not: the count of empty samples
        ours = _our_boxes(spec.replace(old, new))
        theirs = GOLDENS["erasing"]["const_count3"]["boxes"]
        assert D.erasing_differences(ours, theirs) != []
        return
    assert D.erasing_differences(_our_boxes(spec.replace(old, new)), GOLDENS["erasing"]["const_count3"]["boxes"]) != []


def test_const_erasing_zeroes_exactly_the_drawn_boxes_and_pixel_mode_draws_normals():
    base = "Resize((48, 40)); ToTensor(); Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25))"
    data = _read("photos/chelsea.jpg")
    clean = ringfeed.decode(data, transform=base, exact=True)
    for mode in ("const", "rand", "pixel"):
        spec = base + f"; TimmRandomErasing(probability=1.0, min_count=2, max_count=2, mode='{mode}')"
        values = []
        for index in range(40):
            boxes = D.ringfeed_erasing_sample(_ringfeed._transform_draws(spec, 3, 40, 48, 3, 3, 0, index))
            got = ringfeed.decode(data, transform=spec, exact=True, seed=3, index=index)
            mask = torch.zeros(48, 40, dtype=torch.bool)
            for top, left, h, w in boxes:
                mask[int(top):int(top + h), int(left):int(left + w)] = True
            assert torch.equal(got[:, ~mask], clean[:, ~mask]), f"{mode}, sample {index}"
            if mode == "const":
                assert (got[:, mask] == 0).all()
            elif mode == "rand":  # one value per channel and sample
                for top, left, h, w in boxes[-1:]:
                    patch = got[:, int(top):int(top + h), int(left):int(left + w)]
                    assert (patch == patch[:, :1, :1]).all()
            values += got[:, mask].flatten().tolist() if mode == "pixel" else []
        if mode == "pixel":
            normal = [0.5 * (1 + math.erf(x / math.sqrt(2))) for x in sorted(values)]
            d = max(abs(p - (i + 0.5) / len(normal)) for i, p in enumerate(normal))
            assert d < 1.63 / math.sqrt(len(normal)) + 0.005, d


def test_unsupported_timm_settings_are_refused_by_name():
    with pytest.raises(ValueError, match=r"TimmAugMix\(blended\): timm's blended mode"):
        _ringfeed._transform_spec("TimmAugMix(ops=[TimmAugmentOp('Rotate')], blended=True)")
    with pytest.raises(ValueError, match=r"'GaussianBlur' is not an op ringfeed runs"):
        _ringfeed._transform_spec("TimmAugmentOp('GaussianBlur')")
    with pytest.raises(ValueError, match=r"TimmRandomErasing expects a float tensor"):
        RT.output_of("ToImage(); TimmRandomErasing()")
    with pytest.raises(ValueError, match=r"TimmAugMix: .*square image"):
        ringfeed.decode(_read("decode/rgb.jpg"), transform="Resize((30, 40)); TimmAugMix(ops=[TimmAugmentOp("
                                                            "'Rotate', prob=1.0)])", exact=True)


@needs_timm
@pytest.mark.parametrize("rid", ["issue_rand_pixel", "augmix_const3", "jitter_flips_rand", "original_prefetcher"])
def test_create_transforms_training_recipes_run_natively_in_the_dataloader(rid, tmp_path):
    import shutil
    train_tf = TR.train_recipes(timm.data)[rid]
    spec = RT.to_spec(train_tf)
    assert "Timm" in spec or rid == "jitter_flips_rand"
    for k, img in enumerate(["photos/chelsea.jpg", "photos/coffee_portrait.jpg", "decode/rgb.jpg",
                             "webp/lossy.webp"]):
        os.makedirs(tmp_path / "data" / f"c{k % 2}", exist_ok=True)
        shutil.copy(os.path.join(R.DATA, img), tmp_path / "data" / f"c{k % 2}" / os.path.basename(img))
    from torchvision.datasets import ImageFolder
    dataset = ImageFolder(str(tmp_path / "data"), transform=train_tf)
    loader = ringfeed.DataLoader(dataset, batch_size=2, strict=True)
    kind, channels, h, w, random = RT.output_of(train_tf)
    batches = list(loader)
    assert len(batches) == 2 and random
    images, labels = batches[0]
    assert images.shape[0] == 2 and images.shape[1:] == (channels, h, w)
    assert images.dtype == (torch.uint8 if rid == "original_prefetcher" else torch.float32)


GEOMETRY = sorted(GOLDENS["geometry"])


@pytest.mark.parametrize("rid", GEOMETRY)
def test_timms_geometry_classes_give_the_goldens_bytes(rid):
    spec = GOLDENS["geometry"][rid]["spec"]
    for img in R.IMAGES:
        got = ringfeed.decode(_read(img), transform=spec, exact=True, name=img)
        assert R.digest(got) == GOLDENS["geometry"][rid]["digests"][img], f"{rid} on {img}"


@needs_timm
@pytest.mark.parametrize("rid", GEOMETRY)
def test_timms_geometry_classes_translate_and_equal_timm(rid):
    import timm.data.transforms as TT
    import torchvision.transforms as T
    t = TR.geometry_recipes(timm.data, TT)[rid]
    spec = RT.to_spec(t)
    assert spec == GOLDENS["geometry"][rid]["spec"]
    for img in R.IMAGES:
        got = ringfeed.decode(_read(img), transform=t, exact=True, name=img)
        want = R.reference(T.Compose(t) if isinstance(t, list) else t, os.path.join(R.DATA, img))
        assert got.shape == want.shape and torch.equal(got, want), f"{rid} on {img}"


def _geometry_draws(spec, n=N_DRAWS):
    return [_ringfeed._transform_draws(spec, 0, 451, 300, 3, 5, 0, i) for i in range(n)]


def _box_differences(ours, theirs):
    why = []
    for label, f in (("top", lambda b: b[0]), ("left", lambda b: b[1]), ("height", lambda b: b[2]),
                     ("width", lambda b: b[3]), ("area", lambda b: b[2] * b[3])):
        a, b = [f(x) for x in ours], [f(x) for x in theirs]
        d = R.ks(a, b)
        if d > 1.95 * math.sqrt((len(a) + len(b)) / (len(a) * len(b))) * 1.1:
            why.append(f"{label}: KS {d:.3f}")
    return why


@pytest.mark.parametrize("change", [None, ("scale=(0.08, 1.0)", "scale=(0.12, 1.0)"),
                                    ("ratio=(0.75, 1.3333333333333333)", "ratio=(0.85, 1.3333333333333333)")])
def test_random_resized_crop_and_interpolation_draws_timms_boxes(change):
    spec = GOLDENS["random_geometry"]["rrc"]["spec"]
    if change:
        assert change[0] in spec
        spec = spec.replace(*change)
    why = _box_differences(_geometry_draws(spec), GOLDENS["random_geometry"]["rrc"]["draws"])
    assert (why == []) == (change is None), why


@pytest.mark.parametrize("change", [None, ("random_scale_prob=0.5", "random_scale_prob=0.3"),
                                    ("random_scale_area=True", "random_scale_area=False"),
                                    ("random_aspect_prob=0.5", "random_aspect_prob=0.7")])
def test_resize_keep_ratio_draws_timms_sizes(change):
    spec = GOLDENS["random_geometry"]["rkr_random"]["spec"]
    if change:
        assert change[0] in spec
        spec = spec.replace(*change)
    ours = [d[:2] for d in _geometry_draws(spec)]
    theirs = GOLDENS["random_geometry"]["rkr_random"]["draws"]
    why = []
    for k, label in ((0, "height"), (1, "width")):
        a, b = [x[k] for x in ours], [x[k] for x in theirs]
        if R.ks(a, b) > 1.95 * math.sqrt((len(a) + len(b)) / (len(a) * len(b))) * 1.1:
            why.append(label)
    assert (why == []) == (change is None), why


@needs_timm
@pytest.mark.parametrize("rid", ["rrc", "rkr_random"])
def test_the_committed_geometry_draws_are_timms(rid):
    import random
    import timm.data.transforms as TT
    from PIL import Image
    t = TR.random_geometry(TT)[rid]
    assert RT.to_spec(t) == GOLDENS["random_geometry"][rid]["spec"]
    stub = Image.new("RGB", (451, 300))
    random.seed(7)
    if rid == "rrc":
        live = [list(t.get_params(stub, t.scale, t.ratio)) for _ in range(3000)]
        assert _box_differences(live, GOLDENS["random_geometry"][rid]["draws"]) == []
    else:
        live = [t.get_params(stub, t.size, t.longest, t.random_scale_prob, t.random_scale_range,
                             t.random_scale_area, t.random_aspect_prob, t.random_aspect_range) for _ in range(3000)]
        for k in (0, 1):
            a, b = [x[k] for x in live], [x[k] for x in GOLDENS["random_geometry"][rid]["draws"]]
            assert R.ks(a, b) < 1.95 * math.sqrt(2 / 3000) * 1.1


def test_random_interpolation_picks_bilinear_or_bicubic_evenly():
    spec = ("RandomChoice(transforms=[RandomResizedCrop(size=(224, 224), interpolation='bilinear'), "
            "RandomResizedCrop(size=(224, 224), interpolation='bicubic')], p=None)")
    picks = [_ringfeed._transform_draws(spec, 0, 451, 300, 3, 5, 0, i)[0] for i in range(N_DRAWS)]
    assert abs(sum(picks) - N_DRAWS / 2) < 4 * math.sqrt(N_DRAWS / 4)


def _folder(tmp_path, images):
    import shutil
    for k, img in enumerate(images):
        os.makedirs(tmp_path / "data" / f"c{k % 2}", exist_ok=True)
        shutil.copy(os.path.join(R.DATA, img), tmp_path / "data" / f"c{k % 2}" / f"{k}_{os.path.basename(img)}")
    return str(tmp_path / "data")


@needs_timm
@pytest.mark.parametrize("config", ["train_pinned", "train_pinned_prefetcher", "eval_border"])
def test_pinned_timm_recipes_in_the_dataloader_equal_torchs_batches(config, tmp_path):
    """Where timm's draws can be pinned (a full-image crop, no flip, no
    jitter), ringfeed.DataLoader's batches are torch's DataLoader's."""
    from torchvision.datasets import ImageFolder
    c = timm.data.create_transform
    tf = {"train_pinned": c(64, is_training=True, scale=(1.0, 1.0), ratio=(1.0, 1.0), hflip=0.0,
                            color_jitter=None, interpolation="bicubic"),
          "train_pinned_prefetcher": c(64, is_training=True, scale=(1.0, 1.0), ratio=(1.0, 1.0), hflip=0.0,
                                       color_jitter=None, interpolation="bilinear", use_prefetcher=True),
          "eval_border": c(72, crop_mode="border", interpolation="bicubic")}[config]
    root = _folder(tmp_path, ["photos/chelsea.jpg", "photos/coffee_portrait.jpg", "decode/rgb.jpg",
                              "webp/lossy.webp", "decode/gray.jpg", "tiff/rgb_tiled.tif"])
    dataset = ImageFolder(root, transform=tf)
    ours = ringfeed.DataLoader(dataset, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(3),
                               exact=True, strict=True)
    theirs = torch.utils.data.DataLoader(dataset, batch_size=4, shuffle=True,
                                         generator=torch.Generator().manual_seed(3))
    assert ours.backend == "ringfeed"
    got, want = list(ours), list(theirs)
    assert len(got) == len(want) == 2
    for (gi, gl), (wi, wl) in zip(got, want):
        assert gi.dtype == wi.dtype and gi.shape == wi.shape and torch.equal(gl, wl)
        assert (gi.double() - wi.double()).abs().max() <= (0 if gi.dtype == torch.uint8 else 1e-6)


class _ErasingRandom:
    """Python's random for timm's RandomErasing with a one-value area and
    aspect range: random() erases, uniform(a, a) is a, and randint hands
    out ringfeed's count, tops and lefts."""

    def __init__(self, ints):
        self.ints = list(ints)

    def random(self):
        return 0.0

    def uniform(self, a, b):
        assert a == b
        return a

    def randint(self, a, b):
        v = self.ints.pop(0)
        assert a <= v <= b
        return v


@needs_timm
@pytest.mark.parametrize("counts", [(1, 1), (1, 3), (2, 4)])
def test_const_erasing_equals_timms_for_ringfeeds_boxes(counts):
    import torchvision.transforms as T
    from PIL import Image
    obj = RE.RandomErasing(1.0, min_area=0.07, max_area=0.07, min_aspect=1.0, max_aspect=1.0, mode="const",
                           min_count=counts[0], max_count=counts[1], device="cpu")
    base = [T.Resize((40, 52)), T.ToTensor(), T.Normalize((0.4, 0.5, 0.6), (0.2, 0.25, 0.3))]
    spec = RT.to_spec(base + [obj])
    for img in R.IMAGES[:5]:
        with Image.open(os.path.join(R.DATA, img)) as im:
            clean = T.Compose(base)(im.convert("RGB"))
        for index in range(8):
            record = _ringfeed._transform_draws(spec, 3, 52, 40, 3, TR.SEED, 0, index)
            boxes = D.ringfeed_erasing_sample(record)
            ints = ([len(boxes)] if counts[0] != counts[1] else []) + [v for b in boxes for v in b[:2]]
            saved = RE.random
            RE.random = _ErasingRandom([int(v) for v in ints])
            try:
                want = obj(clean.clone())
            finally:
                RE.random = saved
            got = ringfeed.decode(_read(img), transform=spec, exact=True, seed=TR.SEED, index=index, name=img)
            assert torch.equal(got, want), f"{img}, sample {index}"


@pytest.mark.parametrize("rid", sorted(GOLDENS["mix"]))
@pytest.mark.parametrize("alpha", [None, "alpha=0.5"])
def test_augmix_mixing_weights_follow_timms_dirichlet_and_beta(rid, alpha):
    spec = GOLDENS["augment"][rid]["spec"]
    if alpha:
        assert "alpha=1.0" in spec
        spec = spec.replace("alpha=1.0", alpha)
    width = int(spec.split("width=")[1].split(",")[0])
    ours = [_ringfeed._transform_draws(spec, 0, 56, 56, 3, 5, 0, i)[:1 + width] for i in range(N_DRAWS)]
    why = D.mix_differences(ours, GOLDENS["mix"][rid])
    assert (why == []) == (alpha is None), why


@needs_timm
@pytest.mark.parametrize("rid", sorted(GOLDENS["mix"]))
def test_the_committed_mixing_weights_are_timms(rid):
    from PIL import Image
    live = D.timm_mix_samples(AA, LIVE[rid], 3000, 8, Image.new("RGB", (4, 4)))
    assert D.mix_differences(live, GOLDENS["mix"][rid]) == []


@pytest.mark.parametrize("name", sorted(GOLDENS["ops"]))
def test_each_timm_op_alone_gives_the_goldens_bytes(name):
    """Each op of timm's NAME_TO_OP (less the 3-Augment ones), always
    applied, on every test format resized to 43 x 57: timm's bytes for
    ringfeed's draws (magnitude noise, sign, random filter)."""
    spec = TR.OP_BEFORE + "; " + GOLDENS["ops"][name]["spec"]
    for j, img in enumerate(R.IMAGES):
        data = _read(img)
        got = torch.stack([ringfeed.decode(data, transform=spec, exact=True, seed=TR.SEED, index=10 * j + i, name=img)
                           for i in range(TR.OP_SAMPLES)])
        assert R.digest(got) == GOLDENS["ops"][name]["digests"][img], f"{name} on {img}"


@needs_timm
def test_every_timm_op_translates_to_the_goldens_spec():
    ops = TR.op_recipes(AA)
    assert sorted(ops) == sorted(GOLDENS["ops"])
    for name, ra in ops.items():
        assert RT.to_spec(ra) == GOLDENS["ops"][name]["spec"]


@pytest.mark.parametrize("rid", sorted(GOLDENS["crop_or_pad"]))
def test_random_crop_or_pad_gives_the_goldens_bytes_and_timms_offsets(rid):
    case = GOLDENS["crop_or_pad"][rid]
    h, w = TR.CROP_OR_PAD_BEFORE
    for img in R.IMAGES:
        got = torch.stack([ringfeed.decode(_read(img), transform=case["spec"], exact=True, seed=TR.SEED, index=i,
                                           name=img) for i in range(5)])
        assert R.digest(got) == case["digests"][img], f"{rid} on {img}"
    ours = [_ringfeed._transform_draws(case["spec"], 1, w, h, 3, 5, 0, i) for i in range(N_DRAWS)]
    for k in (0, 1):
        a, b = [x[k] for x in ours], [x[k] for x in case["draws"]]
        assert R.ks(a, b) < 1.95 * math.sqrt((len(a) + len(b)) / (len(a) * len(b))) * 1.1, (rid, k)


@needs_timm
@pytest.mark.parametrize("rid", sorted(GOLDENS["crop_or_pad"]))
def test_random_crop_or_pad_translates_and_equals_timm_replayed(rid):
    import numpy as np
    import timm.data.transforms as TT
    import torchvision.transforms as T
    from PIL import Image
    t = TR.crop_or_pad_recipes(TT)[rid]
    h, w = TR.CROP_OR_PAD_BEFORE
    spec = RT.to_spec([T.Resize((h, w)), t])
    assert spec == GOLDENS["crop_or_pad"][rid]["spec"]
    for img in R.IMAGES[:6]:
        with Image.open(os.path.join(R.DATA, img)) as im:
            before = T.Resize((h, w))(im.convert("RGB"))
        for i in range(8):
            record = _ringfeed._transform_draws(spec, 1, w, h, 3, 9, 0, i)
            want = torch.from_numpy(np.array(TR.replay_crop_or_pad(TT, t, before, record)))
            got = ringfeed.decode(_read(img), transform=spec, exact=True, seed=9, index=i, name=img)
            assert got.shape == want.shape and torch.equal(got, want), f"{rid} on {img}, sample {i}"
