"""timm's transform objects (timm.data.create_transform's) as ringfeed specs.

Each class is translated from its attributes, never from a config string:
timm's RandAugment, AutoAugment and AugMixAugment hold AugmentOp objects
(name, prob, magnitude, hparams, kwargs), and each becomes a
TimmAugmentOp(...) of the C++ op of the same name (ops_timm_augment.cpp).
Spec names of timm's own ops start with "Timm" so none can clash with
torchvision's. Whatever cannot run as timm runs it raises ValueError naming
the object and why.
"""
import math

# hparams keys an AugmentOp reads (besides its kwargs, read from there).
_HPARAMS = {"translate_const", "translate_pct", "img_mean", "interpolation", "magnitude_std", "magnitude_max"}
_FILTERS = {0: "nearest", 2: "bilinear", 3: "bicubic"}  # PIL.Image.Resampling values


def _refuse(where, name, why):
    raise ValueError(f"{where} (timm {name}) cannot run natively: {why}")


def _num(v):
    f = float(v)
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return repr(f)


def _tuple(values):
    items = [_num(v) for v in values]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _filter_name(f, where):
    name = getattr(f, "value", None)
    if isinstance(f, str):
        name = f
    elif name is not None or isinstance(f, int):
        name = _FILTERS.get(int(f if name is None else name))
    if name not in ("nearest", "bilinear", "bicubic"):
        _refuse(where, "AugmentOp", f"resample {f!r}: Pillow's affine transforms take nearest, bilinear or bicubic")
    return "'" + name + "'"


def augment_op_spec(op, where):
    """TimmAugmentOp(...) of a timm.data.auto_augment.AugmentOp."""
    unknown = set(op.hparams) - _HPARAMS
    if unknown:
        _refuse(where, "AugmentOp", f"hparams {sorted(unknown)} are not translated")
    kwargs = getattr(op, "kwargs", {})
    fill = kwargs.get("fillcolor", (128, 128, 128))
    fill = tuple(fill) if isinstance(fill, (tuple, list)) else (fill,)
    resample = kwargs.get("resample")
    filters = resample if isinstance(resample, (tuple, list)) else (resample,)
    interp = "(" + ", ".join(_filter_name(f, where) for f in filters) + ("," if len(filters) == 1 else "") + ")"
    mmax = op.magnitude_max
    return (f"TimmAugmentOp(name='{op.name}', prob={_num(op.prob)}, magnitude={_num(op.magnitude)}, "
            f"magnitude_std={_num(op.magnitude_std)}, magnitude_max={'None' if not mmax else _num(mmax)}, "
            f"fill={_tuple(fill)}, interpolation={interp}, "
            f"translate_const={_num(op.hparams.get('translate_const', 250))}, "
            f"translate_pct={_num(op.hparams.get('translate_pct', 0.45))})")


def _ops(ops, where):
    return "[" + ", ".join(augment_op_spec(op, f"{where}.ops[{k}]") for k, op in enumerate(ops)) + "]"


def _rand_augment(t, where):
    weights = t.choice_weights
    w = "None" if weights is None else _tuple(list(weights))
    return f"TimmRandAugment(ops={_ops(t.ops, where)}, num_layers={int(t.num_layers)}, choice_weights={w})"


def _auto_augment(t, where):
    subs = ["[" + ", ".join(augment_op_spec(op, f"{where}.policy[{i}][{k}]") for k, op in enumerate(sub)) + "]"
            for i, sub in enumerate(t.policy)]
    return "TimmAutoAugment(policy=[" + ", ".join(subs) + "])"


def _augmix(t, where):
    if t.blended:
        _refuse(where, "AugMixAugment", "blended=True (_apply_blended; timm notes it differs from the basic "
                                        "mix by more than rounding) is not run")
    return (f"TimmAugMix(ops={_ops(t.ops, where)}, alpha={_num(t.alpha)}, width={int(t.width)}, "
            f"depth={int(t.depth)}, blended=False)")


def _random_erasing(t, where):
    mode = t.mode or "const"
    if mode not in ("const", "rand", "pixel"):
        _refuse(where, "RandomErasing", f"mode {mode!r}")
    return (f"TimmRandomErasing(probability={_num(t.probability)}, min_area={_num(t.min_area)}, "
            f"max_area={_num(t.max_area)}, log_aspect_ratio={_tuple(t.log_aspect_ratio)}, "
            f"min_count={int(t.min_count)}, max_count={int(t.max_count)}, mode='{mode}', "
            f"num_splits={int(t.num_splits)})")


def _to_tensor(t, where):
    # timm's ToTensor: F.pil_to_tensor(img).to(dtype), no scaling
    dtype = str(t.dtype).replace("torch.", "")
    if dtype == "uint8":
        return "PILToTensor()"
    if dtype not in ("float32", "float"):
        _refuse(where, "ToTensor", f"dtype {t.dtype}: ringfeed's tensors inside a list are uint8 or float32")
    return "Compose(transforms=[PILToTensor(), ToDtype(dtype=float32, scale=False)])"


def _interp_name(mode):
    return str(getattr(mode, "value", mode))


def _rrc(t, where):
    size = tuple(int(s) for s in t.size)
    common = f"size={size!r}, scale={_tuple(t.scale)}, ratio={_tuple(t.ratio)}"
    if isinstance(t.interpolation, (tuple, list)):
        # interpolation='random': random.choice of the filters after the crop's draws. The crop does not
        # depend on the filter, so drawing the filter first (RandomChoice) gives the same joint distribution.
        children = [f"RandomResizedCrop({common}, interpolation='{_interp_name(i)}')" for i in t.interpolation]
        return "RandomChoice(transforms=[" + ", ".join(children) + "], p=None)"
    # timm's get_params is torchvision's in Python doubles (random.uniform, int(round()), randint inclusive),
    # which is how ringfeed's RandomResizedCrop draws: the same op, fused with the decoder.
    return f"RandomResizedCrop({common}, interpolation='{_interp_name(t.interpolation)}')"


def _crop_or_pad(t, where):
    name = type(t).__name__
    fill = tuple(t.fill) if isinstance(t.fill, (tuple, list)) else (t.fill,)
    if t.padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        _refuse(where, name, f"padding_mode {t.padding_mode!r}")
    size = tuple(int(s) for s in t.size)
    return f"Timm{name}(size={size!r}, fill={_tuple(fill)}, padding_mode='{t.padding_mode}')"


def _resize_keep_ratio(t, where):
    filters = t.interpolation if isinstance(t.interpolation, (tuple, list)) else (t.interpolation,)
    interp = "(" + ", ".join(f"'{_interp_name(f)}'" for f in filters) + ("," if len(filters) == 1 else "") + ")"
    size = tuple(int(s) for s in t.size)
    return (f"TimmResizeKeepRatio(size={size!r}, longest={_num(t.longest)}, interpolation={interp}, "
            f"random_scale_prob={_num(t.random_scale_prob)}, random_scale_range={_tuple(t.random_scale_range)}, "
            f"random_scale_area={bool(t.random_scale_area)}, random_aspect_prob={_num(t.random_aspect_prob)}, "
            f"random_aspect_range={_tuple(t.random_aspect_range)})")


_TRANSLATORS = {
    "RandAugment": _rand_augment,
    "AutoAugment": _auto_augment,
    "AugMixAugment": _augmix,
    "RandomErasing": _random_erasing,
    "RandomResizedCropAndInterpolation": _rrc,
    "CenterCropOrPad": _crop_or_pad,
    "RandomCropOrPad": _crop_or_pad,
    "ResizeKeepRatio": _resize_keep_ratio,
    "ToTensor": _to_tensor,
}
_SIMPLE = {"MaybeToTensor": "ToTensor()", "MaybePILToTensor": "PILToTensor()", "ToNumpy": "PILToTensor()"}
_REFUSED = {
    "RandomPad": "not translated yet",
    "TrimBorder": "not translated yet",
    "RandomResizedCropToSequence": "NaFlex sequence outputs are not images ringfeed returns",
}


def timm_spec(t, where):
    """The spec of timm object `t`, or None when `t` is not timm's."""
    module = type(t).__module__ or ""
    if not module.startswith("timm."):
        return None
    name = type(t).__name__
    if name in _SIMPLE:
        return _SIMPLE[name]
    if name in _TRANSLATORS:
        return _TRANSLATORS[name](t, where)
    _refuse(where, f"{module}.{name}", _REFUSED.get(name, "not a class ringfeed translates; supported: " +
                                                  ", ".join(sorted(list(_TRANSLATORS) + list(_SIMPLE)))))
