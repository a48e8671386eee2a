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
