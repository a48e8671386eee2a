#!/usr/bin/python3
"""Writes tests/data/image/transforms/goldens.json (and augmix_goldens.json,
AugMix pinned to ringfeed's draws, keyed by the torch that made them): the
digest (shape, dtype, sha256) of torchvision 0.14's output (Pillow 9.4,
Debian 12; the v1 ops give the same bytes on torchvision 0.29) for each
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


def torchvision_v2():
    try:
        from torchvision.transforms import v2
        return v2
    except ImportError:  # torchvision 0.14
        return None


def write(path, out):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


def augmix_goldens():
    """AugMix pinned to ringfeed's draws (seed 11, epoch 0, AUGMIX_SAMPLES):
    needs the ringfeed module on PYTHONPATH, and changes with its draws."""
    import ringfeed.transforms as RT
    from ringfeed import _ringfeed
    RT.follow_installed_torch()
    out = {}
    for rid, case in R.augmix_recipes(T, torch).items():
        before, augmix, after = case
        spec = RT.to_spec(before + [augmix] + after)
        out[rid] = {}
        for img in R.IMAGES:
            out[rid][img] = [R.digest(R.augmix_reference(
                case, os.path.join(R.DATA, img),
                lambda w, h, c, i=index: _ringfeed._transform_draws(spec, len(before), w, h, c, 11, 0, i)))
                for index in R.AUGMIX_SAMPLES]
    return out


def v2_goldens():
    """v2_recipes' translated spec and torchvision's output digest per image
    (torchvision 0.16 or later: run under the torch 2.x venv)."""
    import ringfeed.transforms as RT
    import torchvision
    from torchvision import tv_tensors
    from torchvision.transforms import v2
    import v2_recipes as V
    import timm
    import timm.data
    out = {"_made_with": f"torch {torch.__version__}, torchvision {torchvision.__version__}, timm {timm.__version__}"}
    recipes = V.v2_recipes(v2, T, torch, tv_tensors)
    recipes.update(V.v2_op_recipes(v2, torch))
    recipes.update(V.timm_recipes(timm.data))
    for rid, transform in recipes.items():
        out[rid] = {"spec": RT.to_spec(transform),
                    "digests": {img: R.digest(R.reference(v2.Compose(transform) if isinstance(transform, list)
                                                          else transform, os.path.join(R.DATA, img)))
                                for img in R.IMAGES}}
    return out


def augment_v2_goldens():
    """v2's affine and augment ops (v2_augment_recipes) after a Resize to
    each of AUG_SIZES, pinned to ringfeed's draws (seed 11, epoch 0, the
    samples aug_indices names): the digest of the stacked samples per image, and the torch
    reference whose magnitude bins the draws used. Needs torchvision 0.16
    or later and the ringfeed module; changes with ringfeed's draws."""
    import ringfeed.transforms as RT
    import torchvision
    from ringfeed import _ringfeed
    from torchvision.transforms import v2
    import v2_recipes as V
    out = {"_made_with": f"torch {torch.__version__}, torchvision {torchvision.__version__}",
           "_torch_reference": RT.torch_reference_text(torch)}
    RT.follow_installed_torch()
    for rid, t in V.v2_augment_recipes(v2).items():
        op_spec = RT.to_spec([t])
        out[rid] = {"spec": op_spec, "digests": {}}
        for h, w in V.AUG_SIZES:
            spec = f"Resize(({h}, {w})); {op_spec}"
            out[rid]["digests"][f"{h}x{w}"] = {
                img: R.digest(torch.stack([V.v2_augment_reference(
                    t, os.path.join(R.DATA, img), (h, w),
                    lambda w_, h_, c, i=index: _ringfeed._transform_draws(spec, 1, w_, h_, c, 11, 0, i))[0]
                    for index in V.aug_indices((h, w), img, R.IMAGES)]))
                for img in R.IMAGES}
        if rid not in V.AUG_TENSOR:
            continue
        out[rid]["tensor_digests"] = {}
        for h, w in V.AUG_TENSOR_SIZES:  # after ToImage: v2's tensor kernels
            spec = V.tensor_spec(op_spec, (h, w))
            out[rid]["tensor_digests"][f"{h}x{w}"] = {
                img: R.digest(torch.stack([V.v2_augment_reference(
                    t, os.path.join(R.DATA, img), (h, w),
                    lambda w_, h_, c, i=index: _ringfeed._transform_draws(spec, 2, w_, h_, c, 11, 0, i),
                    tensor=True)[0]
                    for index in V.aug_indices((h, w), img, R.IMAGES)]))
                for img in R.IMAGES}
    return out


def one_row_images():
    """transforms/row_10x1.{png,jpg}: a 10x1 image, whose RandomResizedCrop
    fallback at ratio 1/4 is 0 pixels wide (test_transforms.py)."""
    import numpy as np
    from PIL import Image
    im = Image.fromarray(np.arange(30, dtype=np.uint8).reshape(1, 10, 3) * 8)
    for ext, opts in (("png", {}), ("jpg", {"quality": 90})):
        im.save(os.path.join(R.DATA, "transforms", f"row_10x1.{ext}"), **opts)


def main():
    one_row_images()
    out = {}
    for rid, transform in R.recipes(T, torch).items():
        out[rid] = {img: R.digest(R.reference(transform, os.path.join(R.DATA, img))) for img in R.IMAGES}
    write(R.GOLDENS, out)
    print(f"{R.GOLDENS}: {len(out)} recipes x {len(R.IMAGES)} images")
    if hasattr(torchvision_v2(), "ToImage"):
        write(R.V2_GOLDENS, v2_goldens())
        print(f"{R.V2_GOLDENS}: v2 and nested recipes x {len(R.IMAGES)} images")
        write(R.AUGMENT_V2_GOLDENS, augment_v2_goldens())
        print(f"{R.AUGMENT_V2_GOLDENS}: v2's affine and augment ops x {len(R.IMAGES)} images")
    # AugMix's tensor arithmetic differs between torch versions: one set of
    # goldens per torch it was made with (torch_reference.hpp), this one's
    # replaced, the others kept.
    import ringfeed.transforms as RT
    key = RT.torch_reference_text(torch)
    every = {}
    if os.path.exists(R.AUGMIX_GOLDENS):
        with open(R.AUGMIX_GOLDENS) as f:
            every = json.load(f)
    every[key] = augmix = augmix_goldens()
    write(R.AUGMIX_GOLDENS, every)
    print(f"{R.AUGMIX_GOLDENS}[{key}]: {len(augmix)} AugMix cases x {len(R.IMAGES)} images x "
          f"{len(R.AUGMIX_SAMPLES)} samples")


if __name__ == "__main__":
    main()
