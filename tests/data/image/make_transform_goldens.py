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

TIMM_GOLDENS = os.path.join(R.DATA, "transforms", "timm_goldens.json")


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


def tensor_goldens():
    """v2_recipes.tensor_geometry_recipes' spec and torchvision's output
    (geometry after ToImage: torch 2.x's arithmetic), each entry with the
    torch reference ringfeed follows to match it: uint8 as digests on every
    image, float32 as values (zlib, base64) on
    test_tensor_geometry.FLOAT_GOLDEN_IMAGES. Run again with
    ATEN_CPU_CAPABILITY=default for the "tgdefault_" entries (uint8
    bilinear: a float resize rounded on CPUs without AVX2); the entries of
    the other capability are kept."""
    import ringfeed.transforms as RT
    import torchvision
    from torchvision.transforms import v2
    import v2_recipes as V
    import test_tensor_geometry as G
    reference = RT.torch_reference_text(torch)
    default_cpu = torch.backends.cpu.get_cpu_capability() == "DEFAULT"
    out = {}
    if os.path.exists(R.TENSOR_GOLDENS):
        with open(R.TENSOR_GOLDENS) as f:
            out = {k: v for k, v in json.load(f).items() if k.startswith("tg_" if default_cpu else "tgdefault_")}
    out["_made_with"] = f"torch {torch.__version__}, torchvision {torchvision.__version__}"
    for rid, transform in V.tensor_geometry_recipes(v2, torch).items():
        if default_cpu:
            if not rid.startswith("tg_u8_") or "bilinear" not in rid:
                continue
            rid = "tgdefault_" + rid[len("tg_"):]
        entry = {"spec": RT.to_spec(transform), "reference": reference}
        compose = v2.Compose(transform)
        if rid.startswith("tg_f32_"):
            entry["values"] = {img: G.encode_values(R.reference(compose, os.path.join(R.DATA, img)))
                               for img in G.FLOAT_GOLDEN_IMAGES}
        else:
            entry["digests"] = {img: R.digest(R.reference(compose, os.path.join(R.DATA, img))) for img in R.IMAGES}
        out[rid] = entry
    return out


def timm_goldens():
    """timm's augmentations replayed on ringfeed's draws (digests per image
    and sample), and samples of timm's own draws (test_timm_transforms.py):
    needs timm and the ringfeed module (the torch 2.x venv)."""
    import numpy as np
    from PIL import Image
    import timm
    import timm.data
    import timm.data.auto_augment as AA
    import timm.data.random_erasing as RE
    import ringfeed.transforms as RT
    from ringfeed import _ringfeed
    import timm_draws as D
    import timm_recipes as TR
    RT.follow_installed_torch()
    out = {"_made_with": f"timm {timm.__version__}, Pillow {Image.__version__}, torch {torch.__version__}",
           "augment": {}, "draws": {}, "erasing": {}}
    kinds = {"RandAugment": "RandAugment", "AutoAugment": "AutoAugment", "AugMixAugment": "AugMix"}
    for rid, obj in TR.augment_recipes(timm.data).items():
        spec = RT.to_spec(obj)
        full = TR.BEFORE + "; " + spec
        digests = {}
        for j, img in enumerate(R.IMAGES):
            with Image.open(os.path.join(R.DATA, img)) as im:
                before = T.Resize((56, 56))(im.convert("RGB"))
            digests[img] = [R.digest(torch.from_numpy(np.array(TR.replay(
                AA, obj, before, _ringfeed._transform_draws(full, 1, 56, 56, 3, TR.SEED, 0, TR.sample_index(j, k))))))
                for k in range(len(TR.SAMPLES))]
        out["augment"][rid] = {"spec": spec, "kind": kinds[type(obj).__name__], "digests": digests}
        if rid in TR.DRAW_CASES:
            n = 1000 if type(obj).__name__ == "AugMixAugment" else 3000  # AugMix: 3 chains of 1..3 ops each
            out["draws"][rid] = D.timm_augment_samples(AA, obj, n, 1, Image.new("RGB", (8, 8)))
    import random
    import timm.data.transforms as TT
    out["geometry"] = {}
    for rid, t in TR.geometry_recipes(timm.data, TT).items():
        ref = t if not isinstance(t, list) else T.Compose(t)
        out["geometry"][rid] = {"spec": RT.to_spec(t), "digests": {
            img: R.digest(R.reference(ref, os.path.join(R.DATA, img))) for img in R.IMAGES}}
    out["crop_or_pad"] = {}
    h, w = TR.CROP_OR_PAD_BEFORE
    for rid, t in TR.crop_or_pad_recipes(TT).items():
        spec = RT.to_spec([T.Resize((h, w)), t])
        digests = {}
        for img in R.IMAGES:
            with Image.open(os.path.join(R.DATA, img)) as im:
                before = T.Resize((h, w))(im.convert("RGB"))
            digests[img] = R.digest(torch.stack([torch.from_numpy(np.array(TR.replay_crop_or_pad(
                TT, t, before, _ringfeed._transform_draws(spec, 1, w, h, 3, TR.SEED, 0, i)))) for i in range(5)]))
        stub = Image.new("RGB", (w, h))
        random.seed(1)
        out["crop_or_pad"][rid] = {"spec": spec, "digests": digests,
                                   "draws": [list(t.get_params(stub, t.size)) for _ in range(2000)]}
    from PIL import Image as PILImage
    stub = PILImage.new("RGB", (451, 300))
    out["random_geometry"] = {}
    for rid, t in TR.random_geometry(TT).items():
        random.seed(1)
        if rid == "rrc":
            sizes = [list(t.get_params(stub, t.scale, t.ratio)) for _ in range(3000)]
        else:
            sizes = [t.get_params(stub, t.size, t.longest, t.random_scale_prob, t.random_scale_range,
                                  t.random_scale_area, t.random_aspect_prob, t.random_aspect_range)
                     for _ in range(3000)]
        out["random_geometry"][rid] = {"spec": RT.to_spec(t), "draws": sizes}
    out["ops"] = {}
    for name, ra in TR.op_recipes(AA).items():
        spec = RT.to_spec(ra)
        full = TR.OP_BEFORE + "; " + spec
        digests = {}
        for j, img in enumerate(R.IMAGES):
            with Image.open(os.path.join(R.DATA, img)) as im:
                before = T.Resize((57, 43))(im.convert("RGB"))
            digests[img] = R.digest(torch.stack([torch.from_numpy(np.array(TR.replay(
                AA, ra, before, _ringfeed._transform_draws(full, 1, 43, 57, 3, TR.SEED, 0, 10 * j + i))))
                for i in range(TR.OP_SAMPLES)]))
        out["ops"][name] = {"spec": spec, "digests": digests}
    out["mix"] = {rid: D.timm_mix_samples(AA, obj, 2000, 1, Image.new("RGB", (4, 4)))
                  for rid, obj in TR.augment_recipes(timm.data).items() if type(obj).__name__ == "AugMixAugment"}
    for rid, obj in TR.erasing_recipes(RE).items():
        out["erasing"][rid] = {"spec": RT.to_spec(obj), "boxes": D.timm_erasing_samples(RE, obj, 3000, 1, 48, 40)}
    return out


def write_timm_goldens():
    """timm_goldens.json, its draw samples one per line (compact)."""
    out = timm_goldens()
    with open(TIMM_GOLDENS, "w") as f:
        f.write(json.dumps(out, sort_keys=True, separators=(",", ":")).replace("]],[[", "]],\n[["))
        f.write("\n")


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
        write(R.TENSOR_GOLDENS, tensor_goldens())
        print(f"{R.TENSOR_GOLDENS}: geometry after ToImage, uint8 x {len(R.IMAGES)} images, float32 values")
        write(R.AUGMENT_V2_GOLDENS, augment_v2_goldens())
        print(f"{R.AUGMENT_V2_GOLDENS}: v2's affine and augment ops x {len(R.IMAGES)} images")
    try:
        import timm  # noqa: F401
        write_timm_goldens()
        print(f"{TIMM_GOLDENS}: timm's augmentations, draws and erasing boxes")
    except ImportError:
        print("timm is not installed: timm_goldens.json kept")
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
