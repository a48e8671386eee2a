"""torchvision.transforms.v2 recipes and lists nested in lists, shared by
test_transforms_v2.py and the golden writer (make_transform_goldens.py):
each is built from a module (`v2`, `T` for v1) so the same recipe is made
of torchvision's objects where they are installed. Deterministic ones only:
exact bytes against torchvision on PIL images."""
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def v2_recipes(v2, T, torch, tv_tensors):
    return {
        # the issue's val snippet: PIL ops, then v2's uint8 → float scaling
        "val": v2.Compose([v2.Resize(256), v2.CenterCrop(224), v2.PILToTensor(),
                           v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)]),
        "to_image_float": v2.Compose([v2.Resize(64), v2.CenterCrop(56), v2.ToImage(),
                                      v2.ToDtype(torch.float32, scale=True)]),
        "to_image_unscaled": v2.Compose([v2.Resize(40), v2.ToImage(), v2.ToDtype(torch.float32)]),
        # exact on tensors too: a crop and a flip after ToImage
        "uint8_end": [v2.Resize(40), v2.ToImage(), v2.CenterCrop(32), v2.RandomHorizontalFlip(p=1.0),
                      v2.ToPureTensor()],
        "dtype_dict": v2.Compose([v2.Resize(30), v2.ToImage(),
                                  v2.ToDtype({tv_tensors.Image: torch.float32, "others": None}, scale=True)]),
        "float_back_to_uint8": v2.Compose([v2.Resize(36), v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
                                           v2.Normalize((0.2, 0.3, 0.4), (0.5, 0.6, 0.7)),
                                           v2.ToDtype(torch.uint8, scale=True)]),
        # lists built from lists, v1 and v2, any depth
        "nested_v1": T.Compose([T.Compose([T.Resize(64), T.CenterCrop(60)]), T.Grayscale(3)]),
        "nested_v2": v2.Compose([v2.Compose([v2.Compose([v2.Resize(48)]), v2.CenterCrop(40)]),
                                 v2.Compose([v2.RandomVerticalFlip(p=1.0)]), v2.ToImage(), v2.ToDtype(torch.float32, scale=True)]),
        "nested_in_containers": [T.RandomApply([T.Compose([T.Resize(50), T.CenterCrop(44)])], p=1.0),
                                 T.RandomChoice([T.Compose([T.Resize(20), T.CenterCrop(20)])])],
    }


def timm_recipes(timm_data):
    """timm.data.create_transform's deterministic ones (evaluation)."""
    return {
        "timm_eval_bicubic": timm_data.create_transform(224, crop_pct=0.95, interpolation="bicubic"),
        "timm_eval_default": timm_data.create_transform(96),
    }


def v2_op_recipes(v2, torch):
    """One recipe per v2 class with a v1 twin, its draws pinned (p=1, one-value
    ranges) so the bytes compare: on a PIL image (Pillow's arithmetic), then
    ToImage for a uint8 batch of a fixed size."""
    I = v2.InterpolationMode
    end = [v2.CenterCrop(40), v2.ToImage()]
    ops = {
        "Resize_bilinear": v2.Resize(48),
        "Resize_bicubic_hw": v2.Resize((50, 44), interpolation=I.BICUBIC),
        "Resize_nearest_max": v2.Resize(44, interpolation=I.NEAREST, max_size=60),
        "Resize_lanczos": v2.Resize(46, interpolation=I.LANCZOS),
        "CenterCrop": v2.CenterCrop((42, 41)),
        "Pad_reflect": v2.Pad(3, padding_mode="reflect"),
        "Pad_fill": v2.Pad((1, 2, 3, 4), fill=(10, 20, 30)),
        # a 36x36 image padded by 2: the one 40x40 crop there is
        "RandomCrop_padded": v2.Compose([v2.Resize((36, 36)), v2.RandomCrop(40, padding=2, fill=7)]),
        "RandomResizedCrop_full": v2.RandomResizedCrop(40, scale=(1.0, 1.0), ratio=(1.0, 1.0)),
        "RandomHorizontalFlip": v2.RandomHorizontalFlip(p=1.0),
        "RandomVerticalFlip": v2.RandomVerticalFlip(p=1.0),
        # one property each: their order is drawn
        "ColorJitter_pinned": v2.Compose([v2.ColorJitter(brightness=(1.3, 1.3)), v2.ColorJitter(contrast=(0.8, 0.8)),
                                          v2.ColorJitter(saturation=(1.2, 1.2)), v2.ColorJitter(hue=(0.1, 0.1))]),
        "Grayscale3": v2.Grayscale(num_output_channels=3),
        "RandomGrayscale": v2.RandomGrayscale(p=1.0),
        "GaussianBlur_pinned": v2.GaussianBlur(5, sigma=(1.5, 1.5)),
        "RandomRotation_pinned": v2.RandomRotation((17, 17), interpolation=I.BILINEAR, fill=5),
        "RandomPosterize": v2.RandomPosterize(3, p=1.0),
        "RandomSolarize": v2.RandomSolarize(100, p=1.0),
        "RandomAutocontrast": v2.RandomAutocontrast(p=1.0),
        "RandomEqualize": v2.RandomEqualize(p=1.0),
        "RandomAdjustSharpness": v2.RandomAdjustSharpness(2.5, p=1.0),
        "RandomInvert": v2.RandomInvert(p=1.0),
    }
    out = {f"v2op_{name}": v2.Compose([op] + end) for name, op in ops.items()}
    # after ToImage: the ops that are exact on a uint8 tensor
    out["v2op_tensor_flips_crop"] = v2.Compose([v2.Resize(48), v2.ToImage(), v2.RandomHorizontalFlip(p=1.0),
                                                v2.RandomVerticalFlip(p=1.0), v2.CenterCrop(40)])
    out["v2op_tensor_normalize"] = v2.Compose([v2.Resize(48), v2.CenterCrop(40), v2.ToImage(),
                                               v2.ToDtype(torch.float32, scale=True),
                                               v2.Normalize((0.4, 0.5, 0.6), (0.2, 0.25, 0.3))])
    return out


def tensor_geometry_recipes(v2, torch):
    """Geometry after ToImage() (issue 42): each op on a uint8 tensor
    ("tg_u8_*") and on a float32 one after ToDtype(float32, scale=True)
    ("tg_f32_*"), draws pinned (p=1, one possible crop), interpolations
    with and without antialias, down- and up-scaling of odd sizes (the PIL
    Resize in front only fixes the size, with Pillow's arithmetic)."""
    I = v2.InterpolationMode
    small, mid = v2.Resize((13, 17)), v2.Resize((61, 53))
    ops = {
        "resize_down_bilinear_aa": (mid, v2.Resize((19, 15))),
        "resize_down_bilinear": (mid, v2.Resize((19, 15), antialias=False)),
        "resize_down_bicubic_aa": (mid, v2.Resize((19, 15), interpolation=I.BICUBIC)),
        "resize_down_bicubic": (mid, v2.Resize((19, 15), interpolation=I.BICUBIC, antialias=False)),
        "resize_down_nearest": (mid, v2.Resize((19, 15), interpolation=I.NEAREST)),
        "resize_up_bilinear_aa": (small, v2.Resize((21, 26))),
        "resize_up_bilinear": (small, v2.Resize((21, 26), antialias=False)),
        "resize_up_bicubic_aa": (small, v2.Resize((21, 26), interpolation=I.BICUBIC)),
        "resize_up_bicubic": (small, v2.Resize((21, 26), interpolation=I.BICUBIC, antialias=False)),
        "resize_up_nearest": (small, v2.Resize((29, 35), interpolation=I.NEAREST)),
        "resize_width_only_bicubic": (small, v2.Resize((13, 24), interpolation=I.BICUBIC)),
        "resize_height_down_bilinear": (mid, v2.Resize((17, 53))),
        "resize_shorter_max_size": (mid, v2.Resize(18, max_size=20)),
        "random_resized_crop": (mid, v2.RandomResizedCrop((19, 15), scale=(1.0, 1.0), ratio=(1.0, 1.0))),
        "random_resized_crop_bicubic": (small, v2.RandomResizedCrop(
            (21, 26), scale=(1.0, 1.0), ratio=(1.0, 1.0), interpolation=I.BICUBIC, antialias=False)),
        "center_crop_padded": (small, v2.CenterCrop((16, 22))),
        "center_crop": (mid, v2.CenterCrop((18, 21))),
        "random_crop_constant": (small, v2.RandomCrop((17, 21), padding=2, fill=7)),
        "random_crop_reflect": (small, v2.RandomCrop((15, 23), padding=(3, 1), padding_mode="reflect")),
        "random_crop_edge": (small, v2.RandomCrop((15, 23), padding=(3, 1), padding_mode="edge")),
        "random_crop_symmetric": (small, v2.RandomCrop((15, 23), padding=(3, 1), padding_mode="symmetric")),
        "pad_fill_vector": (small, v2.Pad((1, 2, 3, 4), fill=(10, 20, 30))),
        "pad_symmetric": (small, v2.Pad(2, padding_mode="symmetric")),
        "flips": (small, v2.RandomHorizontalFlip(p=1.0), v2.RandomVerticalFlip(p=1.0)),
    }
    out = {}
    for name, (size, *tail) in ops.items():
        out[f"tg_u8_{name}"] = [size, v2.ToImage(), *tail]
        out[f"tg_f32_{name}"] = [size, v2.ToImage(), v2.ToDtype(torch.float32, scale=True), *tail]
    # one channel (an "L" image), and the decoded image itself, any size
    out["tg_u8_gray_resize_down_bilinear_aa"] = [v2.Grayscale(), mid, v2.ToImage(), v2.Resize((19, 15))]
    out["tg_f32_gray_resize_up_bicubic"] = [v2.Grayscale(), small, v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
                                            v2.Resize((21, 26), interpolation=I.BICUBIC, antialias=False)]
    out["tg_u8_raw_resize_bilinear_aa"] = [v2.ToImage(), v2.Resize(33)]
    out["tg_u8_raw_resize_bicubic"] = [v2.ToImage(), v2.Resize(33, interpolation=I.BICUBIC, antialias=False)]
    return out
# --- v2's affine matrix and augment policies (test_augment_v2.py) -------------------

# ringfeed's augment op ids (draw_for_test: id, magnitude per step), in
# ops_augment.cpp's order.
AUG_NAMES = ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color",
             "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert"]
AUG_SIZES = [(29, 37), (24, 31)]  # (h, w) each image is resized to first: odd sides
AUG_SAMPLES = 16  # samples per (size, image), seed 11, epoch 0


def aug_indices(size, img, images):
    """The sample indices for `img` (of `images`) at `size` (of AUG_SIZES or
    AUG_TENSOR_SIZES): other ones for each, so the draws cover every op."""
    sizes = AUG_SIZES + [s for s in AUG_TENSOR_SIZES if s not in AUG_SIZES]
    base = (sizes.index(size) * len(images) + images.index(img)) * AUG_SAMPLES
    return range(base, base + AUG_SAMPLES)


def v2_augment_recipes(v2):
    """v2's classes with v2's own arithmetic on PIL images: the affine
    matrix (RandomAffine, the policies' shears and translations) and the
    policies' Solarize magnitudes."""
    I, P = v2.InterpolationMode, v2.AutoAugmentPolicy
    return {
        "aa_imagenet": v2.AutoAugment(P.IMAGENET),
        "aa_cifar10_fill": v2.AutoAugment(P.CIFAR10, fill=[10, 20, 30]),
        "aa_svhn_bilinear": v2.AutoAugment(P.SVHN, interpolation=I.BILINEAR),
        "ra": v2.RandAugment(),
        "ra_3_5_10_fill": v2.RandAugment(num_ops=3, magnitude=5, num_magnitude_bins=10, fill=128),
        "ta_wide": v2.TrivialAugmentWide(),
        "ta_wide_bilinear": v2.TrivialAugmentWide(interpolation=I.BILINEAR, fill=[0, 255, 0]),
        "ta_bilinear": v2.TrivialAugmentWide(interpolation=I.BILINEAR),
        "affine": v2.RandomAffine(30, translate=(0.2, 0.3), scale=(0.7, 1.3), shear=(-10, 10, -5, 5)),
        "affine_bilinear": v2.RandomAffine(20, translate=(0.1, 0.1), shear=(-5, 5),
                                           interpolation=I.BILINEAR),
        "affine_bicubic_center": v2.RandomAffine((-45, 20), scale=(0.9, 1.1), shear=8, interpolation=I.BICUBIC,
                                                 fill=(1, 2, 3), center=(5, 7)),
        "affine_fill_center": v2.RandomAffine((-45, 20), scale=(0.9, 1.1), shear=8, fill=(1, 2, 3), center=(5, 7)),
        "affine_bilinear_fill": v2.RandomAffine(25, translate=(0.1, 0.2), interpolation=I.BILINEAR, fill=(200, 7, 90)),
        "rotation": v2.RandomRotation(40),
        "rotation_bilinear_center": v2.RandomRotation((-60, 30), interpolation=I.BILINEAR, center=(5, 7)),
        "rotation_quarter_fill": v2.RandomRotation((90, 90), fill=(1, 2, 3)),
        "rotation_bilinear_fill": v2.RandomRotation(50, interpolation=I.BILINEAR, fill=131),
        "augmix": v2.AugMix(),
        "augmix_sev10_w2_d2": v2.AugMix(severity=10, mixture_width=2, chain_depth=2),
        "augmix_basic_nearest_fill": v2.AugMix(all_ops=False, interpolation=I.NEAREST, fill=[10, 200, 30]),
        "augmix_alpha_half_w4": v2.AugMix(severity=7, alpha=0.5, mixture_width=4),
        "augmix_fill": v2.AugMix(fill=[10, 200, 30]),
    }


# the recipes v2 runs on a uint8 tensor too (after ToImage): nearest or
# bilinear interpolation
AUG_TENSOR = ["aa_cifar10_fill", "aa_imagenet", "aa_svhn_bilinear", "affine", "affine_bilinear", "affine_bilinear_fill",
              "affine_fill_center", "augmix", "augmix_alpha_half_w4", "augmix_basic_nearest_fill", "augmix_fill",
              "augmix_sev10_w2_d2", "ra", "ra_3_5_10_fill", "rotation", "rotation_bilinear_center",
              "rotation_bilinear_fill", "rotation_quarter_fill", "ta_bilinear", "ta_wide", "ta_wide_bilinear"]
AUG_TENSOR_SIZES = [(29, 37), (32, 32)]  # square: rotate_image's rot90 fast paths


def tensor_spec(op_spec, size):
    """The list the tensor recipes run in: the op (position 2) after ToImage."""
    return f"Resize(({size[0]}, {size[1]})); ToImage(); {op_spec}"


def v2_augment_reference(t, path, size, draws_of, tensor=False):
    """torchvision's output of v2 op `t` on the image at `path` resized to
    size (h, w), with t's draws pinned to ringfeed's: `draws_of(w, h, c)`
    (_ringfeed._transform_draws). tensor: after v2.ToImage(). Returns (HWC
    uint8 tensor, or CHW with tensor, the ops)."""
    import numpy as np
    import torch
    from PIL import Image
    with Image.open(path) as im:
        img = im.convert("RGB").resize((size[1], size[0]), Image.BILINEAR)
    d = list(draws_of(img.width, img.height, 3))
    if tensor:
        from torchvision.transforms import v2
        img = v2.ToImage()(img)
    if type(t).__name__ == "AugMix":
        img, ops = _augmix_pinned(t, img, d)
    elif type(t).__name__ == "RandomRotation":
        ops = [("rotation", d[0])]
        img = t.transform(img, dict(angle=d[0]))
    elif type(t).__name__ == "RandomAffine":
        angle, tx, ty, scale, sx, sy = d
        ops = [("affine", (angle, tx, ty, scale, sx, sy))]
        img = t.transform(img, dict(angle=angle, translate=(int(tx), int(ty)), scale=scale, shear=(sx, sy)))
    else:
        ops = [(AUG_NAMES[int(d[k])], d[k + 1]) for k in range(0, len(d), 2)]
        for name, magnitude in ops:
            img = t._apply_image_or_video_transform(img, name, magnitude, interpolation=t.interpolation,
                                                    fill=t._fill)
    return (img.as_subclass(torch.Tensor) if tensor else torch.from_numpy(np.array(img))), ops


def _augmix_pinned(t, img, draws):
    """v2 AugMix `t` on img with its draws pinned to ringfeed's (draw_for_test:
    [m0, m1, chain weights, every int drawn in order]): the Dirichlet weights
    through _sample_dirichlet, torch.randint's values in order, and each sign
    (torch.rand(()) <= 0.5: negative) from ringfeed's sign draw (1: negative)."""
    import torch
    width = t.mixture_width
    weights = [torch.tensor([draws[0:2]]), torch.tensor([draws[2:2 + width]])]
    ints = iter(draws[2 + width:])
    names = []
    apply = t._apply_image_or_video_transform

    def record(image, transform_id, *args, **kwargs):
        names.append(transform_id)
        return apply(image, transform_id, *args, **kwargs)

    t._sample_dirichlet = lambda params: weights.pop(0)
    t._apply_image_or_video_transform = record
    real_randint, real_rand, threads = torch.randint, torch.rand, torch.get_num_threads()
    torch.randint = lambda *args, **kwargs: torch.tensor(int(next(ints)))
    torch.rand = lambda *args, **kwargs: torch.tensor(0.0 if int(next(ints)) == 1 else 1.0)
    torch.set_num_threads(1)  # Contrast's mean: torch's sum order depends on its thread count past 32768 pixels
    try:
        img = t(img)
    finally:
        torch.randint, torch.rand = real_randint, real_rand
        torch.set_num_threads(threads)
        del t._sample_dirichlet, t._apply_image_or_video_transform
    assert next(ints, None) is None, "ringfeed drew more than torchvision used"
    return img, [(name, None) for name in names]
