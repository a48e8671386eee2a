"""ringfeed.transforms' classes are generated from the C++ signature table
(op_signatures.cpp): they take torchvision's constructor arguments, in
torchvision's order, with torchvision's defaults."""
import inspect

import pytest

import ringfeed.transforms as RT
from ringfeed import _ringfeed


def test_every_op_the_spec_knows_is_a_class_and_nothing_else_is():
    ops = set(_ringfeed._transform_ops().split(", "))
    assert set(RT._SIGNATURES) == ops | {"Compose"}
    for name in ops:
        if "." in name:  # "v2.RandomAffine": the spec name of v2's objects, v1's parameters; no class
            assert not hasattr(RT, name) and RT._SIGNATURES[name] == RT._SIGNATURES[name.split(".", 1)[1]], name
            continue
        assert [p for p, _ in getattr(RT, name)._params] == [p for p, _ in RT._SIGNATURES[name]]


def _plain(value):
    """A default as comparable data: enums by value, tuples as tuples."""
    if hasattr(value, "value") and hasattr(type(value), "__members__"):
        return value.value
    if isinstance(value, list):
        return tuple(value)
    return value


# Defaults torchvision changed after 0.14, whose table ringfeed.transforms
# keeps: from 0.17, v1 Resize and RandomResizedCrop default to
# antialias=True instead of None. On PIL images, where these ops run, both
# mean Pillow's antialiased resample; a torchvision object is translated
# from its own attributes, so its default is the installed one.
_CHANGED_SINCE_0_14 = {((0, 17), "Resize", "antialias"), ((0, 17), "RandomResizedCrop", "antialias")}


_V2_ONLY = ("ToImage", "ToDtype", "ToPureTensor")  # torchvision.transforms.v2's, from 0.16


def _version(text):
    return tuple(int(part) for part in text.split("+")[0].split(".")[:2])


def test_the_signatures_equal_torchvisions_where_it_is_installed():
    tv = pytest.importorskip("torchvision.transforms")
    import torchvision
    installed = _version(torchvision.__version__)
    allowed = {(name, param) for since, name, param in _CHANGED_SINCE_0_14 if installed >= since}
    try:
        from torchvision.transforms import v2
    except ImportError:  # torchvision 0.14: v2's own ops are not there to compare with
        v2 = None
    checked, differ = 0, set()
    for name, params in RT._SIGNATURES.items():
        if name.startswith("Timm") or "." in name:  # timm's objects' attributes; v2's twins of v1's
            continue
        if name in _V2_ONLY:
            if v2 is None or not hasattr(v2, name):
                continue
            reference = inspect.signature(getattr(v2, name)).parameters
        else:
            reference = inspect.signature(getattr(tv, name)).parameters
        assert [p for p, _ in params] == list(reference), name
        for param, default in params:
            expected = reference[param].default
            if default is RT._REQUIRED:
                assert expected is inspect.Parameter.empty, (name, param)
            elif _plain(default) != _plain(expected):
                differ.add((name, param))
        checked += 1
    timm_ops = sum(name.startswith("Timm") or "." in name for name in RT._SIGNATURES)
    assert checked == len(RT._SIGNATURES) - timm_ops - (len(_V2_ONLY) if v2 is None or not hasattr(v2, "ToImage")
                                                        else 0)
    assert differ == allowed, f"torchvision {torchvision.__version__}"


def test_defaults_are_what_an_object_holds():
    crop = RT.RandomResizedCrop(64)
    assert crop.scale == (0.08, 1.0) and crop.ratio == (3.0 / 4.0, 4.0 / 3.0)
    assert crop.interpolation is RT.InterpolationMode.BILINEAR
    assert RT.AutoAugment().policy is RT.AutoAugmentPolicy.IMAGENET
    assert RT.RandomCrop(8).padding_mode == "constant"
