"""timm's training transforms (timm.data.create_transform(is_training=True))
and their pieces, shared by test_timm_transforms.py and the golden writer
(make_transform_goldens.py), and the replay that runs timm's own objects on
ringfeed's draws: timm's module-level `random` and `np.random` are swapped
for scripted ones that hand out, call by call and checking which call it
is, the values ringfeed drew (its _transform_draws record), so timm's own
code computes the levels and the pixels."""
import contextlib
import math

import numpy as np

SEED = 23
SAMPLES = (0, 1, 2, 3, 5, 8)


def sample_index(image_position, k):
    """The sample index of the k-th sample of the image at position
    image_position of transform_recipes.IMAGES: other draws per image, so
    the images together apply every op of a recipe."""
    return 100 * image_position + SAMPLES[k]
BEFORE = "Resize((56, 56))"
# the recipes whose draws are compared with timm's (samples committed)
DRAW_CASES = ("rand_m9_mstd05_inc1_random", "rand_weights_mmax", "original_random", "augmix_default_random")  # square: timm's AugMix only mixes square images


OP_BEFORE = "Resize((57, 43))"  # not square: the affine ops' x and y differ
OP_SAMPLES = 4


def op_recipes(auto_augment):
    """name -> a RandAugment of that one AugmentOp, always applied, with
    magnitude noise and the random bilinear/bicubic filter: each of timm's
    ops ringfeed runs, alone."""
    hparams = dict(translate_const=100, img_mean=(124, 116, 104), magnitude_std=0.5)
    return {name: auto_augment.RandAugment([auto_augment.AugmentOp(name, prob=1.0, magnitude=7, hparams=hparams)], 1)
            for name in auto_augment.NAME_TO_OP if name not in ("GaussianBlur", "GaussianBlurRand", "Desaturate")}


def augment_recipes(timm_data):
    """id -> the timm augmentation object (RandAugment / AutoAugment /
    AugMixAugment) create_transform builds for a config string."""
    out = {}
    for rid, aa, interp in (("rand_m9_mstd05_inc1_bicubic", "rand-m9-mstd0.5-inc1", "bicubic"),
                            ("rand_m9_mstd05_inc1_random", "rand-m9-mstd0.5-inc1", "random"),
                            ("rand_m7_n3_plain_bilinear", "rand-m7-n3", "bilinear"),
                            ("rand_weights_mmax", "rand-m12-mmax15-n2-mstd101-tweights", "bicubic"),
                            ("original_random", "original", "random"),
                            ("original_mstd", "original-mstd0.5", "bicubic"),
                            ("v0_bilinear", "v0", "bilinear"),
                            ("augmix_m5_w4_d2", "augmix-m5-w4-d2", "bicubic"),
                            ("augmix_default_random", "augmix", "random")):
        t = timm_data.create_transform(224, is_training=True, auto_augment=aa, interpolation=interp)
        out[rid] = t.transforms[2]
    return out


def geometry_recipes(timm_data, timm_transforms):
    """id -> a deterministic list of timm's geometry classes (exact bytes)."""
    import torch
    TT = timm_transforms
    return {
        "eval_border": timm_data.create_transform(64, crop_mode="border", interpolation="bicubic"),
        "rkr_longest": [TT.ResizeKeepRatio(50, longest=1.0, interpolation="bilinear")],
        "rkr_blend_hw": [TT.ResizeKeepRatio((40, 70), longest=0.3, interpolation="bicubic")],
        "ccop_reflect": [TT.ResizeKeepRatio(30), TT.CenterCropOrPad((45, 33), padding_mode="reflect")],
        "ccop_fill": [TT.ResizeKeepRatio(30), TT.CenterCropOrPad(41, fill=(1, 2, 3))],
        "ccop_edge_crop": [TT.CenterCropOrPad((21, 301), padding_mode="edge")],
        "rrc_full_bicubic": [TT.RandomResizedCropAndInterpolation(48, scale=(1.0, 1.0), ratio=(1.0, 1.0),
                                                                  interpolation="bicubic")],
        "numpy_out": [TT.CenterCropOrPad(40), TT.ToNumpy()],
        "maybe_pil_to_tensor": [TT.CenterCropOrPad(40), TT.MaybePILToTensor()],
        "to_tensor_unscaled": [TT.CenterCropOrPad(40), TT.ToTensor()],  # timm's: no / 255
        "to_tensor_uint8": [TT.CenterCropOrPad(40), TT.ToTensor(torch.uint8)],
    }


def random_geometry(timm_transforms):
    """id -> a random geometry op whose draws are compared with timm's
    get_params (on a 451 x 300 image)."""
    TT = timm_transforms
    return {
        "rrc": TT.RandomResizedCropAndInterpolation(224, interpolation="bicubic"),
        "rkr_random": TT.ResizeKeepRatio(224, interpolation="bilinear", random_scale_prob=0.5,
                                         random_scale_range=(0.8, 1.0), random_scale_area=True,
                                         random_aspect_prob=0.5, random_aspect_range=(0.9, 1 / 0.9)),
    }


CROP_OR_PAD_BEFORE = (50, 45)  # (height, width) before each RandomCropOrPad


def crop_or_pad_recipes(timm_transforms):
    """id -> a RandomCropOrPad: smaller, larger and mixed targets."""
    C = timm_transforms.RandomCropOrPad
    return {"reflect_mixed": C((40, 57), padding_mode="reflect"),
            "fill_taller": C((64, 20), fill=(5, 6, 7)),
            "edge_wider": C((25, 90), padding_mode="edge")}


class RandintScript:
    """Python's random for timm.data.transforms: randint hands out ringfeed's
    |top| and |left| (get_params' randint(0, |delta|))."""

    def __init__(self, values):
        self.values = list(values)

    def randint(self, a, b):
        v = self.values.pop(0)
        assert a <= v <= b, (a, v, b)
        return v


def replay_crop_or_pad(timm_transforms, t, image, record):
    saved = timm_transforms.random
    timm_transforms.random = RandintScript([abs(int(v)) for v in record])
    try:
        return t(image)
    finally:
        timm_transforms.random = saved


def erasing_recipes(random_erasing):
    """id -> a timm RandomErasing (as create_transform builds them)."""
    E = random_erasing.RandomErasing
    return {
        "const_count3": E(0.5, mode="const", max_count=3, device="cpu"),
        "pixel_issue": E(0.25, mode="pixel", max_count=1, num_splits=0, device="cpu"),
        "rand_count1to4": E(1.0, min_area=0.05, max_area=0.4, min_aspect=0.5, mode="rand", min_count=1,
                            max_count=4, device="cpu"),
    }


def train_recipes(timm_data):
    """id -> a whole create_transform(is_training=True) Compose."""
    c = timm_data.create_transform
    return {
        "issue_rand_pixel": c(224, is_training=True, auto_augment="rand-m9-mstd0.5-inc1", interpolation="bicubic",
                              re_prob=0.25, re_mode="pixel"),
        "augmix_const3": c(64, is_training=True, auto_augment="augmix-m5-w4-d2", interpolation="random",
                           re_prob=0.5, re_mode="const", re_count=3),
        "jitter_flips_rand": c(96, is_training=True, hflip=0.5, vflip=0.5, color_jitter=0.4, interpolation="bilinear",
                               re_prob=0.3, re_mode="rand"),
        "original_prefetcher": c(128, is_training=True, auto_augment="original", use_prefetcher=True),
    }


class _Script:
    """Hands out scripted values: each `take(kind)` pops the next (kind,
    value) and checks the kind, so a draw timm makes that ringfeed did not
    (or in another order) fails loudly."""

    def __init__(self):
        self.items = []

    def put(self, kind, value):
        self.items.append((kind, value))

    def take(self, kind):
        assert self.items, f"timm draws a {kind} ringfeed did not"
        got, value = self.items.pop(0)
        assert got == kind, f"timm draws a {kind} where ringfeed drew a {got}"
        return value


class _Random:
    """Python's random, as timm.data.auto_augment uses it."""

    def __init__(self, script):
        self.s = script

    def random(self):
        return self.s.take("random")

    def gauss(self, mu, sigma):
        return self.s.take("magnitude")

    def uniform(self, a, b):
        return self.s.take("magnitude")

    def choice(self, seq):
        return seq[self.s.take("choice")]


class _NpRandom:
    def __init__(self, script):
        self.s = script

    def choice(self, a, size, replace=True, p=None):
        return [a[k] for k in self.s.take("np_choice")]

    def randint(self, lo, hi):
        return self.s.take("randint")

    def dirichlet(self, alpha):
        return np.array(self.s.take("dirichlet"), dtype=np.float64)

    def beta(self, a, b):
        return float(self.s.take("beta"))


class _Np:
    def __init__(self, script):
        self.random = _NpRandom(script)

    def __getattr__(self, name):
        return getattr(np, name)


def _script_op(script, op, record):
    """One AugmentOp's record {k, applied, magnitude, arg, filter} as the
    values timm's AugmentOp.__call__ draws."""
    _, applied, magnitude, arg, filt = record
    if op.prob < 1.0:
        script.put("random", 0.0 if applied else 1.0)  # random.random() > prob skips
    if not applied:
        return
    if op.magnitude_std > 0:
        script.put("magnitude", magnitude)  # already clipped: timm's clip keeps it
    if op.name in ("Rotate", "ShearX", "ShearY", "TranslateX", "TranslateY", "TranslateXRel", "TranslateYRel") or (
            op.name.endswith("Increasing") and op.name[:-len("Increasing")] in ("Color", "Contrast", "Brightness",
                                                                                "Sharpness")):
        negated = math.copysign(1.0, arg) < 0 if not op.name.endswith("Increasing") else arg < 1.0
        script.put("random", 1.0 if negated else 0.0)  # _randomly_negate: random.random() > 0.5
    if filt >= 0 and isinstance(op.kwargs.get("resample"), (tuple, list)):
        script.put("choice", int(filt))


def _chunks(record, start, count):
    return [record[start + 5 * i:start + 5 * i + 5] for i in range(count)]


def script_augment(obj, record):
    """The script of one call of timm object `obj` (RandAugment,
    AutoAugment or AugMixAugment) from ringfeed's record of its draws."""
    script = _Script()
    name = type(obj).__name__
    if name == "RandAugment":
        steps = _chunks(record, 0, obj.num_layers)
        script.put("np_choice", [int(s[0]) for s in steps])
        for s in steps:
            _script_op(script, obj.ops[int(s[0])], s)
    elif name == "AutoAugment":
        sub = obj.policy[int(record[0])]
        script.put("choice", int(record[0]))
        for s in _chunks(record, 1, len(sub)):
            _script_op(script, sub[int(s[0])], s)
    else:  # AugMixAugment
        m, weights = record[0], record[1:1 + obj.width]
        script.put("dirichlet", weights)
        script.put("beta", m)
        at = 1 + obj.width
        for _ in range(obj.width):
            depth = int(record[at])
            at += 1
            if obj.depth <= 0:
                script.put("randint", depth)
            steps = _chunks(record, at, depth)
            at += 5 * depth
            script.put("np_choice", [int(s[0]) for s in steps])
            for s in steps:
                _script_op(script, obj.ops[int(s[0])], s)
    return script


@contextlib.contextmanager
def scripted(module, script):
    """timm.data.auto_augment with `random` and `np` replaced by `script`'s."""
    saved = module.random, module.np
    module.random, module.np = _Random(script), _Np(script)
    try:
        yield
    finally:
        module.random, module.np = saved
    assert not script.items, f"ringfeed drew {script.items} that timm did not use"


def replay(module, obj, image, record):
    """timm's `obj`(image) with ringfeed's draws."""
    script = script_augment(obj, record)
    with scripted(module, script):
        return obj(image)
