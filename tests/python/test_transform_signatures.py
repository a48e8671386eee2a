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
        assert [p for p, _ in getattr(RT, name)._params] == [p for p, _ in RT._SIGNATURES[name]]


def _plain(value):
    """A default as comparable data: enums by value, tuples as tuples."""
    if hasattr(value, "value") and hasattr(type(value), "__members__"):
        return value.value
    if isinstance(value, list):
        return tuple(value)
    return value


def test_the_signatures_equal_torchvisions_where_it_is_installed():
    tv = pytest.importorskip("torchvision.transforms")
    checked = 0
    for name, params in RT._SIGNATURES.items():
        reference = inspect.signature(getattr(tv, name)).parameters
        assert [p for p, _ in params] == list(reference), name
        for param, default in params:
            expected = reference[param].default
            if default is RT._REQUIRED:
                assert expected is inspect.Parameter.empty, (name, param)
            else:
                assert _plain(default) == _plain(expected), (name, param, default, expected)
        checked += 1
    assert checked == len(RT._SIGNATURES)


def test_defaults_are_what_an_object_holds():
    crop = RT.RandomResizedCrop(64)
    assert crop.scale == (0.08, 1.0) and crop.ratio == (3.0 / 4.0, 4.0 / 3.0)
    assert crop.interpolation is RT.InterpolationMode.BILINEAR
    assert RT.AutoAugment().policy is RT.AutoAugmentPolicy.IMAGENET
    assert RT.RandomCrop(8).padding_mode == "constant"
