#!/usr/bin/python3
"""Writes tests/data/image/transforms/goldens.json: the digest (shape,
dtype, sha256) of torchvision 0.14's output (Pillow 9.4, Debian 12) for each
recipe of tests/python/transform_recipes.py on each of its images, so the
transform parity tests also run where torchvision is not installed.
Deterministic: rerun after adding a recipe; unchanged entries stay equal."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import torch  # noqa: E402
import torchvision.transforms as T  # noqa: E402

import transform_recipes as R  # noqa: E402


def main():
    out = {}
    for rid, transform in R.recipes(T, torch).items():
        out[rid] = {img: R.digest(R.reference(transform, os.path.join(R.DATA, img))) for img in R.IMAGES}
    os.makedirs(os.path.dirname(R.GOLDENS), exist_ok=True)
    with open(R.GOLDENS, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{R.GOLDENS}: {len(out)} recipes x {len(R.IMAGES)} images")


if __name__ == "__main__":
    main()
