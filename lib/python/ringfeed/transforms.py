"""torchvision.transforms' classes, run natively by ringfeed.

    import ringfeed.transforms as T
    t = T.Compose([T.RandomResizedCrop(176), T.RandomHorizontalFlip(), T.ToTensor(),
                   T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    loader = ringfeed.Loader("/data/train", transform=t)

The classes take torchvision 0.14's constructor arguments with the same
defaults and do nothing in Python: a list is written as one spec string
(`to_spec`) and compiled once in C++, where every sample is transformed with
torchvision's semantics on PIL images (Pillow 9.4's arithmetic).

Wherever ringfeed takes a transform it also takes torchvision's own objects
(a Compose, a list, or one transform): `to_spec` translates them op by op
from their attributes; timm's (timm.data.create_transform's) likewise, as
the Timm-named ops (_timm.py). An op ringfeed cannot run raises ValueError
naming it, its position and what is supported; nothing is approximated.
"""
import ast
import enum
import math
import numbers
import sys

from . import _ringfeed, _timm


class InterpolationMode(enum.Enum):
    """torchvision.transforms.InterpolationMode's members."""
    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


class AutoAugmentPolicy(enum.Enum):
    """torchvision.transforms.AutoAugmentPolicy's members."""
    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


_REQUIRED = object()


def _default(text):
    """A default of the C++ signature table (spec syntax) as a Python value."""
    for enum_type in (InterpolationMode, AutoAugmentPolicy):
        if text.startswith(enum_type.__name__ + "."):
            return enum_type[text.split(".", 1)[1]]
    return ast.literal_eval(text)


# name -> torchvision 0.14's constructor parameters and defaults, in order,
# generated from the C++ table every spec is bound to (op_signatures.cpp).
# The attribute of a torchvision object with a parameter's name holds what
# the spec needs (torchvision stores them under the same names).
_SIGNATURES = {"Compose": [("transforms", _REQUIRED)]}
_SIGNATURES.update((name, [(param, _REQUIRED if default is None else _default(default))
                           for param, default in params])
                   for name, params in _ringfeed._transform_signatures())
_CONTAINERS = ("Compose", "RandomApply", "RandomChoice", "RandomOrder")


class _Transform:
    """A torchvision-named transform: it records its arguments; C++ runs it."""
    _params = ()

    def __init__(self, *args, **kwargs):
        name = type(self).__name__
        if len(args) > len(self._params):
            raise TypeError(f"{name}() takes at most {len(self._params)} arguments ({len(args)} given)")
        values = dict(zip((p for p, _ in self._params), args))
        for key, value in kwargs.items():
            if key not in dict(self._params):
                raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
            if key in values:
                raise TypeError(f"{name}() got multiple values for argument {key!r}")
            values[key] = value
        for param, default in self._params:
            if param not in values:
                if default is _REQUIRED:
                    raise TypeError(f"{name}() missing required argument: {param!r}")
                values[param] = default
            setattr(self, param, values[param])
        if name != "Compose":
            to_spec(self)  # torchvision's argument checks, now

    def __call__(self, img):
        raise TypeError(f"ringfeed.transforms.{type(self).__name__} runs inside ringfeed (Loader, decode), "
                        "not on a Python image; use torchvision.transforms for that")

    def __repr__(self):
        return to_spec(self)


for _name, _params in _SIGNATURES.items():
    if "." in _name:  # "v2.RandomAffine": a spec name for v2's objects, not a class
        continue
    globals()[_name] = type(_name, (_Transform,), {"_params": tuple(_params), "__module__": __name__})
del _name, _params


# --- the spec string ------------------------------------------------------------------

def _value(v, where):
    if v is None or isinstance(v, bool):
        return repr(v)
    if isinstance(v, enum.Enum):
        return str(v.value) if isinstance(v.value, str) else v.name
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        f = float(v)
        return repr(f) if math.isfinite(f) else ("inf" if f > 0 else "-inf" if f < 0 else "nan")
    if isinstance(v, str):
        if "'" in v:
            raise ValueError(f"{where}: string {v!r} cannot be written to the spec")
        return "'" + v + "'"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_value(x, where) for x in v)
        return "(" + inner + ("," if len(v) == 1 else "") + ")"
    typename = type(v).__module__ + "." + type(v).__name__
    if typename == "torch.dtype":
        return str(v).replace("torch.", "")
    if isinstance(v, dict):  # v2.ToDtype's {type: dtype}: what the image gets
        for key, dtype in v.items():
            if getattr(key, "__name__", key) in ("Image", "Tensor"):
                return _value(dtype, where)
        raise ValueError(f"{where}: a dict of dtypes without one for the image (tv_tensors.Image) "
                         f"cannot be translated: {v!r}")
    if hasattr(v, "tolist"):  # a tensor or numpy array of numbers
        return _value(v.tolist(), where)
    raise ValueError(f"{where}: value {v!r} of type {type(v).__name__} is not supported")


# torchvision 0.29's v2 classes keep `interpolation` as given (their default
# is the string "bilinear"; a PIL filter number stays a number), 0.26's and
# v1's store an InterpolationMode: each is written as the mode it names, so a
# spec does not depend on the version or the spelling. torchvision's own
# mapping (_interpolation_modes_from_int) for the numbers; a mode ringfeed does
# not run (NEAREST_EXACT) is written as its quoted name, which the op refuses.
_PIL_FILTERS = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming"}


def _interpolation_mode(value):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) in _PIL_FILTERS:
        return InterpolationMode(_PIL_FILTERS[int(value)])
    name = value.value if isinstance(value, enum.Enum) else value
    if isinstance(name, str):
        return InterpolationMode(name) if name in {m.value for m in InterpolationMode} else name
    return value


def _check_v2_interpolation(value, where):
    """torchvision's own check of a v2 op's interpolation, which it runs when
    the op runs (0.26 and 0.27 refuse a string there, 0.28 on take it): refused here
    as the installed torchvision would refuse it."""
    check = getattr(sys.modules.get("torchvision.transforms.v2.functional._geometry"), "_check_interpolation", None)
    if check is None:
        return
    try:
        check(value)
    except (TypeError, ValueError) as e:
        version = getattr(sys.modules.get("torchvision"), "__version__", "?")
        raise ValueError(f"{where}: torchvision {version} refuses it: {e}") from None


def _is_transform_object(t):
    module = type(t).__module__ or ""
    return module.startswith("torchvision.transforms") or module.startswith(__name__)


# Other libraries' classes: timm's (timm.data.create_transform's) are
# translated by _timm.timm_spec from their attributes; MaybeToTensor is
# F.to_tensor on a PIL image (a tensor passes through, which ringfeed's
# ToTensor refuses by name instead).

# v2 classes whose arithmetic on PIL images is not v1's: v2 rewrote
# _get_inverse_affine_matrix (other double rounding: a bilinear pixel of an
# odd-sized image differs by 1), which RandomAffine and the augment
# policies' shears and translations use, and the policies scale Solarize's
# threshold from float32 linspace(1, 0) (v1: linspace(255, 0)). Their
# objects are written as "v2.<name>(...)", the ops with v2's arithmetic.
# AugMix's chains run v2's tensor kernels (saturation, contrast, sharpness,
# autocontrast differ from v1's); RandomRotation computes as v1's on a PIL
# image but as v2's rotate_image after ToImage.
_V2_OWN_ARITHMETIC = ("RandomAffine", "RandomRotation", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix")


def _is_v2(t):
    return (type(t).__module__ or "").startswith("torchvision.transforms.v2")


def _op_spec(t, where):
    foreign = _timm.timm_spec(t, where)
    if foreign is not None:
        return foreign
    if isinstance(t, (list, tuple)):  # a list inside a container runs as a Compose
        items = [_op_spec(c, f"{where}[{k}]") for k, c in enumerate(t)]
        return "Compose(transforms=[" + ", ".join(items) + "])"
    name = type(t).__name__
    spec_name = name
    if name in _V2_OWN_ARITHMETIC and (type(t).__module__ or "").startswith("torchvision.transforms.v2"):
        spec_name = "v2." + name
    if name not in _SIGNATURES or not _is_transform_object(t):
        supported = _ringfeed._transform_ops()
        raise ValueError(f"{where} ({type(t).__module__}.{name}) is not a transform ringfeed can run; "
                         f"supported: {supported}")
    args = []
    for param, _ in _SIGNATURES[spec_name]:
        if not hasattr(t, param):
            raise ValueError(f"{where} ({name}) has no attribute {param!r} to translate")
        value = getattr(t, param)
        if param == "interpolation":
            if _is_v2(t):
                _check_v2_interpolation(value, f"{where} ({name}).interpolation")
            value = _interpolation_mode(value)
        if name == "RandomCrop" and param == "padding" and value is not None and _is_v2(t):
            left, right, top, bottom = value  # v2 keeps torch's order: back to torchvision's
            value = (left, top, right, bottom)
        if (param == "transforms" and name in _CONTAINERS) or (param in ("ops", "policy") and
                                                               name.startswith("Timm")):
            # a list of ops (lists of ops: a TimmAutoAugment policy), each translated
            items = [_op_spec(c, f"{where}.{param}[{k}]") if not isinstance(c, (list, tuple)) else
                     "[" + ", ".join(_op_spec(x, f"{where}.{param}[{k}]") for x in c) + "]"
                     for k, c in enumerate(value)]
            args.append(f"{param}=[" + ", ".join(items) + "]")
        else:
            args.append(f"{param}={_value(value, f'{where} ({name}).{param}')}")
    return f"{spec_name}({', '.join(args)})"


def _flatten(transform):
    """The ops of a list, a Compose (v1 or v2) or one op, with the lists and
    Composes inside it (any depth) opened in place: one flat list, so the
    decoder can still fuse its head (Resize, crops, flips)."""
    if isinstance(transform, (list, tuple)):
        items = list(transform)
    elif type(transform).__name__ == "Compose" and _is_transform_object(transform):
        items = list(transform.transforms)
    else:
        return [transform]
    return [op for item in items for op in _flatten(item)]


_followed = None


def follow_installed_torch():
    """Make the ops built from now on follow the arithmetic of the torch this
    process has imported (where torch versions differ: torch.linspace's
    float32 bins; see torch_reference.hpp). Called wherever a transform is
    translated; without torch imported, the C++ default (torch 1.13, AVX2,
    the goldens' reference) stays. Returns the reference's name."""
    global _followed
    torch = sys.modules.get("torch")
    if torch is None or getattr(torch, "__version__", None) is None:
        return _ringfeed._torch_reference()
    if _followed is not torch:
        text = torch_reference_text(torch)
        for name, key in (("torchvision", "torchvision"), ("PIL", "pillow")):
            version = getattr(sys.modules.get(name), "__version__", None)
            if version:
                text += f" {key}={version}"
        _ringfeed._set_torch_reference(text)
        _followed = torch
    return _ringfeed._torch_reference()


def torch_reference_text(torch):
    """"torch=<version> cpu=<capability>" of an imported torch module."""
    cpu = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    if cpu is not None:
        cpu = cpu()
    else:  # torch 1.x: the line "CPU capability usage: AVX2" of its build summary
        cpu = next((line.split(":", 1)[1].strip() for line in torch.__config__.show().splitlines()
                    if "CPU capability usage" in line), "AVX2")
    return f"torch={torch.__version__} cpu={cpu}"


# v1's F_t.resize resizes a float copy of a uint8 tensor and rounds; ringfeed
# runs that under torch 1.x, where every tensor resize is v1's, and v2's
# uint8 kernels under torch 2.x (torch_reference.hpp): a v1 resize of a
# uint8 tensor under torch 2.x is refused by name (_check_v1_tensor_resize).
_V1_RESIZES = ("Resize", "RandomResizedCrop")


def _kind_before(ops, position):
    """What ops[:position] give ("image", "uint8" or "float32"), or None where
    they do not parse: the list's own error comes when it is parsed whole."""
    try:
        return _ringfeed._transform_output(_joined(ops[:position]), 0, 0)[0]
    except ValueError:
        return None


def _check_v1_tensor_resize(flat, ops):
    torch = sys.modules.get("torch")
    if torch is None or not str(getattr(torch, "__version__", "1")).split(".")[0].isdigit() \
            or int(str(torch.__version__).split(".")[0]) < 2:
        return
    for position, t in enumerate(flat):
        name = type(t).__name__
        if name not in _V1_RESIZES or not (type(t).__module__ or "").startswith("torchvision.transforms.transforms"):
            continue
        mode = getattr(getattr(t, "interpolation", None), "value", None)
        if position == 0 or mode not in ("bilinear", "bicubic"):
            continue
        kind = _kind_before(ops, position)
        if kind is None:
            return
        if kind == "uint8":
            raise ValueError(f"transform {position} ({name}): torchvision.transforms.{name} (v1) on a uint8 tensor "
                             f"resizes a float copy and rounds under torch {torch.__version__}, which ringfeed does "
                             f"not run there; use transforms.v2.{name} (torch's uint8 kernels, which ringfeed runs) "
                             f"or put it before ToImage() / PILToTensor()")


# torch 2.x without a vector unit (get_cpu_capability() DEFAULT: an x86 CPU
# without AVX2, ATEN_CPU_CAPABILITY=default, or aarch64) rounds AugMix's
# float mix, and on tensors the policies' ops and the bilinear affine,
# otherwise than the AVX2 / AVX512 kernels ringfeed follows there (the live
# tests: perf/results/parity_cpu_capability.md). torchvision's are refused
# by name there: other bytes than torch's would be a silent difference.
_VECTOR_UNIT_OPS = ("AugMix",)
_VECTOR_UNIT_TENSOR_OPS = ("AutoAugment", "RandAugment", "TrivialAugmentWide")
_VECTOR_UNIT_BILINEAR_OPS = ("RandomAffine", "RandomRotation")


def _check_vector_unit(flat, ops):
    torch = sys.modules.get("torch")
    if torch is None or getattr(torch, "__version__", None) is None:
        return
    reference = torch_reference_text(torch)
    if not reference.upper().endswith("CPU=DEFAULT"):
        return
    if _kind_before(ops, len(ops)) is None:
        return  # the list's own error, more to the point, comes when it is parsed
    for position, t in enumerate(flat):
        name = type(t).__name__
        what = None
        if not (type(t).__module__ or "").startswith("torchvision."):
            continue  # ringfeed's own classes: no torchvision object to match
        if name in _VECTOR_UNIT_OPS:
            what = "mixes in float32"
        elif name in _VECTOR_UNIT_TENSOR_OPS + _VECTOR_UNIT_BILINEAR_OPS and position > 0:
            mode = getattr(getattr(t, "interpolation", None), "value", None)
            if name in _VECTOR_UNIT_BILINEAR_OPS and mode != "bilinear":
                continue
            if _kind_before(ops, position) == "image":
                continue
            what = "on a tensor computes in float32"
        if what:
            raise ValueError(f"transform {position} ({name}): {name} {what}, and torch without a vector unit "
                             f"({reference}) rounds it otherwise than on AVX2 / AVX512, which ringfeed follows; "
                             f"its bytes would differ from torch's (run torch with AVX2: ATEN_CPU_CAPABILITY=avx2)")


def _op_specs(transform):
    """[(type name, spec)] of each op of `transform`, translated, not parsed."""
    follow_installed_torch()
    flat = _flatten(transform)
    ops = [(type(t).__name__, _op_spec(t, f"transform {position}")) for position, t in enumerate(flat)]
    _check_v1_tensor_resize(flat, ops)
    _check_vector_unit(flat, ops)
    return ops


def _joined(ops):
    return "; ".join(spec for _, spec in ops)


def _name_the_op(ops, error):
    """A ValueError from parsing _joined(ops) in C++, reworded to name the op
    it is about and its position ("transform 2 (GaussianBlur): transform
    spec, column 14: ..."), with the column counted within that op."""
    message = str(error)
    head = "transform spec, column "
    if message.startswith(head):
        column, _, reason = message[len(head):].partition(": ")
        if column.isdigit():
            at, offset = int(column) - 1, 0
            for position, (name, spec) in enumerate(ops):
                if offset <= at < offset + len(spec):
                    return ValueError(f"transform {position} ({name}): {head}{at - offset + 1}: {reason}")
                offset += len(spec) + 2
    if len(ops) == 1:
        return ValueError(f"transform 0 ({ops[0][0]}): {message}")
    return ValueError(message)


def to_spec(transform, check=True):
    """The spec string of `transform`: a ringfeed.transforms or torchvision
    transform, a Compose of them, or a list. A str is taken as a spec.
    Raises ValueError naming the op and its position when one cannot run.
    check=False: translated only (C++ parses it where it is used, and a
    ValueError from there is reworded by _name_the_op)."""
    if isinstance(transform, str):
        follow_installed_torch()
        return transform
    ops = _op_specs(transform)
    spec = _joined(ops)
    if check:
        try:
            _ringfeed._transform_spec(spec)
        except ValueError as e:
            raise _name_the_op(ops, e) from None
    return spec


def output_of(transform, source_size=None):
    """(kind, channels, height, width, random) of what `transform` ends
    with: kind "image" (uint8 HWC), "uint8" (a CHW tensor) or "float32";
    height and width None when they depend on the image (of any size, or
    of source_size=(height, width)); random True when an op draws random
    parameters. The list is parsed once, here."""
    height, width = source_size if source_size is not None else (0, 0)
    follow_installed_torch()
    ops = None if isinstance(transform, str) else _op_specs(transform)
    try:
        return _ringfeed._transform_output(transform if ops is None else _joined(ops), height, width)
    except ValueError as e:
        raise (e if ops is None else _name_the_op(ops, e)) from None


__all__ = ["InterpolationMode", "AutoAugmentPolicy", "to_spec", "output_of", "follow_installed_torch"] + [
    n for n in _SIGNATURES if "." not in n]
