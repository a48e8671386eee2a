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
