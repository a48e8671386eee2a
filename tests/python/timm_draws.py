"""The random draws of timm's training transforms and of ringfeed's
translations, as comparable samples (test_timm_transforms.py; the golden
writer stores timm's, so the comparison also runs where timm is absent).

A sample of an augmentation is the list of the ops it applied, each as
[name, arg, filter]: name as timm spells it, arg the level function's
argument (None for ops without one), filter the resampling choice (-1 for
ops without one). A sample of an erasing is its list of boxes [top, left,
h, w]. `differences` compares two such sets of samples statistically and
names what differs."""
import math
import re

from transform_recipes import ks

GEOMETRIC = ("Rotate", "ShearX", "ShearY", "TranslateX", "TranslateY", "TranslateXRel", "TranslateYRel")
DISCRETE = ("Posterize", "PosterizeIncreasing", "PosterizeOriginal", "Solarize", "SolarizeIncreasing", "SolarizeAdd")


def rounded(x):
    """x to 9 significant digits, as the committed samples hold it."""
    return float(f"{x:.9g}")


def op_names(spec):
    return re.findall(r"TimmAugmentOp\(name='(\w+)'", spec)


def ringfeed_augment_sample(spec_names, record, kind, width=0):
    """[name, arg, filter] of each applied op of one _transform_draws record."""
    out = []

    def ops(start, count, names):
        for i in range(count):
            k, applied, _, arg, filt = record[start + 5 * i:start + 5 * i + 5]
            if applied:
                out.append([names[int(k)], None if math.isnan(arg) else rounded(arg), int(filt)])
        return start + 5 * count

    if kind == "RandAugment":
        ops(0, len(record) // 5, spec_names)
    elif kind == "AutoAugment":
        sub = spec_names[int(record[0])]
        ops(1, len(sub), sub)
    else:  # AugMix: m, weights, then per chain its depth and its ops
        at = 1 + width
        for _ in range(width):
            depth = int(record[at])
            at = ops(at + 1, depth, spec_names)
    return out


def timm_augment_samples(module, obj, n, seed, image):
    """n calls of timm's `obj` with each AugmentOp's aug_fn swapped for a
    recorder (the pixels are not computed; the draws are timm's own)."""
    import random
    import numpy as np
    random.seed(seed)
    np.random.seed(seed)
    current = []

    def recorder(name):
        def fn(img, *args, **kwargs):
            filt = -1
            if name in GEOMETRIC:
                choices = kwargs.get("resample")
                picked = module._interpolation(dict(kwargs))
                filt = list(choices).index(picked) if isinstance(choices, (tuple, list)) else 0
            current.append([name, rounded(float(args[0])) if args else None, filt])
            return img
        return fn

    ops = obj.ops if hasattr(obj, "ops") else [op for sub in obj.policy for op in sub]
    saved = [op.aug_fn for op in ops]
    for op in ops:
        op.aug_fn = recorder(op.name)
    samples = []
    try:
        for _ in range(n):
            current = []
            obj(image)
            samples.append(current)
    finally:
        for op, fn in zip(ops, saved):
            op.aug_fn = fn
    return samples


def timm_mix_samples(module, obj, n, seed, image):
    """n calls of timm's AugMixAugment recording its np.float32 mixing
    weights and m: [m, w0, w1, ...] (the ops' draws are timm's own too; the
    ops are swapped for identities, so the mixing runs on `image` fast)."""
    import numpy as np
    np.random.seed(seed)
    out = []
    real = np.random

    class Recorder:
        def __getattr__(self, name):
            return getattr(real, name)

        def dirichlet(self, alpha):
            v = real.dirichlet(alpha)
            out.append([None] + [float(f"{np.float32(x):.7g}") for x in v])
            return v

        def beta(self, a, b):
            v = real.beta(a, b)
            out[-1][0] = float(f"{np.float32(v):.7g}")
            return v

    class Np:
        random = Recorder()

        def __getattr__(self, name):
            return getattr(np, name)

    saved_np, saved = module.np, [op.aug_fn for op in obj.ops]
    module.np = Np()
    for op in obj.ops:
        op.aug_fn = lambda img, *a, **k: img
    try:
        for _ in range(n):
            obj(image)
    finally:
        module.np = saved_np
        for op, fn in zip(obj.ops, saved):
            op.aug_fn = fn
    return out


def mix_differences(ours, theirs):
    """KS of m and of the first mixing weight."""
    why = []
    for k, label in ((0, "m"), (1, "first weight")):
        a, b = [x[k] for x in ours], [x[k] for x in theirs]
        d = ks(a, b)
        crit = 1.95 * math.sqrt((len(a) + len(b)) / (len(a) * len(b))) * 1.1
        if d > crit:
            why.append(f"{label}: KS {d:.3f} > {crit:.3f}")
    return why


def _chi2(a, b):
    """Two-sample chi-square statistic of two count dicts, and its degrees
    of freedom."""
    keys = set(a) | set(b)
    na, nb = sum(a.values()), sum(b.values())
    stat = 0.0
    for k in keys:
        x, y = a.get(k, 0), b.get(k, 0)
        if x + y:
            stat += (x * math.sqrt(nb / na) - y * math.sqrt(na / nb)) ** 2 / (x + y)
    return stat, max(1, len(keys) - 1)


def _chi2_ok(stat, df):
    # about the 0.9999 quantile: 1 in 10^4 false alarms per comparison
    return stat <= df + 8.5 * math.sqrt(2 * df) + 4


def _counts(items):
    out = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def _magnitude_scale(name):
    """|arg| / this = magnitude / 10 for the continuous ops (their noisy
    magnitude, comparable across ops)."""
    return {"Rotate": 30.0, "ShearX": 0.3, "ShearY": 0.3}.get(name)


def differences(ours, theirs):
    """What differs between two sets of augmentation samples: a list of
    reasons, empty when every statistic agrees."""
    why = []
    flat = [[op for s in samples for op in s] for samples in (ours, theirs)]
    # which ops are applied, how often (op choice x probability), and the
    # discrete ops' arguments (posterize bits, solarize thresholds)
    cats = [_counts((o[0], o[1] if o[0] in DISCRETE else None) for o in f) for f in flat]
    stat, df = _chi2(*cats)
    if not _chi2_ok(stat, df):
        why.append(f"applied ops and discrete arguments: chi2 {stat:.1f} on {df} df")
    why += [f"number of ops applied per sample: chi2 {s:.1f} on {d} df"
            for s, d in [_chi2(*[_counts(len(s) for s in x) for x in (ours, theirs)])] if not _chi2_ok(s, d)]
    # the continuous arguments, per op
    names = sorted({o[0] for f in flat for o in f if o[1] is not None and o[0] not in DISCRETE})
    for name in names:
        a, b = ([o[1] for o in f if o[0] == name] for f in flat)
        if min(len(a), len(b)) < 50:
            continue
        d = ks(a, b)
        crit = 1.95 * math.sqrt((len(a) + len(b)) / (len(a) * len(b))) * 1.1
        if d > crit:
            why.append(f"{name}'s argument: KS {d:.3f} > {crit:.3f}")
    # the magnitude noise, pooled over the ops whose |arg| is a magnitude
    pooled = [[abs(o[1]) / _magnitude_scale(o[0]) * 10 for o in f if _magnitude_scale(o[0])] for f in flat]
    if min(map(len, pooled)) >= 50:
        d = ks(*pooled)
        crit = 1.95 * math.sqrt((len(pooled[0]) + len(pooled[1])) / (len(pooled[0]) * len(pooled[1])))
        if d > crit:
            why.append(f"pooled magnitudes: KS {d:.3f} > {crit:.3f}")
    # the filter choice of the geometric ops
    stat, df = _chi2(*[_counts(o[2] for o in f if o[0] in GEOMETRIC) for f in flat])
    if not _chi2_ok(stat, df):
        why.append(f"resampling filter: chi2 {stat:.1f} on {df} df")
    return why


def timm_erasing_samples(module, obj, n, seed, height, width):
    """n calls of timm's RandomErasing._erase, recording the boxes it
    assigns (a stand-in tensor takes the slices; no values are made)."""
    import random
    random.seed(seed)
    boxes = []

    class Sink:
        def __setitem__(self, key, value):
            _, rows, cols = key
            boxes.append([rows.start, cols.start, rows.stop - rows.start, cols.stop - cols.start])

    saved = module._get_pixels
    module._get_pixels = lambda *a, **k: None
    samples = []
    try:
        for _ in range(n):
            boxes = []
            obj._erase(Sink(), 3, height, width, None)
            samples.append(boxes)
    finally:
        module._get_pixels = saved
    return samples


def ringfeed_erasing_sample(record):
    return [record[1 + 4 * i:5 + 4 * i] for i in range(int(record[0]))]


def erasing_differences(ours, theirs):
    why = []
    stat, df = _chi2(*[_counts(len(s) for s in x) for x in (ours, theirs)])
    if not _chi2_ok(stat, df):
        why.append(f"number of boxes: chi2 {stat:.1f} on {df} df")
    for label, f in (("area", lambda b: b[2] * b[3]), ("aspect", lambda b: b[2] / max(b[3], 1e-9)),
                     ("top", lambda b: b[0]), ("left", lambda b: b[1])):
        a, b = ([f(box) for s in x for box in s] for x in (ours, theirs))
        if min(len(a), len(b)) < 50:
            why.append(f"too few boxes to compare {label}")
            continue
        d = ks(a, b)
        crit = 1.95 * math.sqrt((len(a) + len(b)) / (len(a) * len(b))) * 1.1
        if d > crit:
            why.append(f"box {label}: KS {d:.3f} > {crit:.3f}")
    return why
