"""Argument checks shared by ringfeed's Python front ends (Loader, decode,
ImageFolder): one wording everywhere. Each returns the value it accepts and
raises ValueError naming the argument, what it takes and what it got.
(C++ checks the same options again; the vocabularies, output types, I/O
backends and error policies, are parsed once there, in lib/loader/names.cpp.)"""
from __future__ import annotations


def int_arg(name, value, minimum=0, maximum=2**64 - 1):
    """An int (not a bool) >= minimum and <= maximum (by default what C++'s
    64-bit unsigned integers hold)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, not {value!r}")
    if value > maximum:
        raise ValueError(f"{name} must be an int <= {maximum}, not {value!r}")
    return value


def flag(name, value):
    """True or False (not 0, 1 or None)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, not {value!r}")
    return value


def choice(name, value, choices):
    """One of `choices`."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, not {value!r}")
    return value
