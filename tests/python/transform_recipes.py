"""The recipes and images the transform parity tests run, shared by
test_transforms.py, test_augmix.py and
tests/data/image/make_transform_goldens.py (which writes torchvision's
outputs' digests into tests/data/image/transforms/goldens.json and
augmix_goldens.json).

Each recipe is a function of torchvision.transforms (and torch) returning a
torchvision transform whose randomness is pinned (p=1, degenerate ranges),
so its output is a function of the image alone. Images are opened as
ImageFolder does: PIL.Image.open(f).convert("RGB").
"""
import hashlib
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "image")
GOLDENS = os.path.join(DATA, "transforms", "goldens.json")
AUGMIX_GOLDENS = os.path.join(DATA, "transforms", "augmix_goldens.json")
V2_GOLDENS = os.path.join(DATA, "transforms", "v2_goldens.json")
TENSOR_GOLDENS = os.path.join(DATA, "transforms", "tensor_goldens.json")
AUGMENT_V2_GOLDENS = os.path.join(DATA, "transforms", "augment_v2_goldens.json")

# One or more of every format the decoders read, grayscale and alpha
# included, tiny to photo-sized, square and not.
IMAGES = [
    "decode/rgb.jpg", "decode/gray.jpg", "decode/rgba.png", "decode/palette.png", "decode/gray16.png",
    "webp/lossy.webp", "webp/gray_lossless.webp", "tiff/rgb_tiled.tif", "tiff/la.tif",
    "bmp_pnm/rgb24.bmp", "bmp_pnm/gray.pgm", "photos/chelsea.jpg", "photos/coffee_portrait.jpg",
]

IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


def without_vector_unit():
    """Why ringfeed does not follow torch's float arithmetic for AugMix and
    the tensor policies / bilinear affine here (get_cpu_capability() DEFAULT,
    perf/results/parity_cpu_capability.md), or None where it does."""
    import torch
    cpu = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    if cpu is not None and cpu() == "DEFAULT":
        return ("torch without a vector unit (DEFAULT) rounds AugMix and the tensor policies / bilinear affine "
                "otherwise than the AVX2 / AVX512 kernels ringfeed follows; ringfeed refuses torchvision's there")
    return None


def recipes(T, torch):
    """id -> torchvision transform (pinned randomness)."""
    I = T.InterpolationMode
    return {
        # the PyTorch tuning guide's CIFAR snippet
        "resize_hw_tensor_norm05": T.Compose([T.Resize((224, 224)), T.ToTensor(), T.Normalize(mean=[0.5], std=[0.5])]),
        # timm-style evaluation at crop_pct 0.875, 0.9 and 0.95, bicubic
        "timm_eval_875": T.Compose([T.Resize(int(224 / 0.875), I.BICUBIC), T.CenterCrop(224), T.ToTensor(),
                                    T.Normalize(*IMAGENET)]),
        "timm_eval_90": T.Compose([T.Resize(int(224 / 0.9), I.BICUBIC), T.CenterCrop(224), T.ToTensor(),
                                   T.Normalize(*IMAGENET)]),
        "timm_eval_95": T.Compose([T.Resize(int(224 / 0.95), I.BICUBIC), T.CenterCrop(224), T.ToTensor(),
                                   T.Normalize(*IMAGENET)]),
        # torchvision's reference eval with --val-resize-size 232, PILToTensor + ConvertImageDtype
        "ref_val_232": T.Compose([T.Resize(232, I.BILINEAR), T.CenterCrop(224), T.PILToTensor(),
                                  T.ConvertImageDtype(torch.float), T.Normalize(*IMAGENET)]),
        # each resampling filter, odd and non-square sizes, flips pinned
        "lanczos_odd_vflip": T.Compose([T.Resize((17, 9), I.LANCZOS), T.RandomVerticalFlip(p=1.0),
                                        T.PILToTensor()]),
        "box_tiny_hflip": T.Compose([T.Resize((2, 3), I.BOX), T.RandomHorizontalFlip(p=1.0)]),
        "hamming_max_size": T.Compose([T.Resize(30, I.HAMMING, max_size=40), T.CenterCrop(31)]),
        "bilinear_1px": T.Compose([T.Resize((1, 1)), T.ToTensor()]),
        # CenterCrop larger than the image pads with zeros, then float ops
        "center_crop_pads": T.Compose([T.CenterCrop((71, 50)), T.ToTensor(), T.Normalize((0.1,), (0.3,))]),
        "crop_after_flip": T.Compose([T.RandomHorizontalFlip(p=1.0), T.CenterCrop((20, 31)),
                                      T.RandomVerticalFlip(p=1.0)]),
        # float ops after ToTensor that stay exact: flips and crops of tensors
        "tensor_flip_crop": T.Compose([T.Resize(40), T.ToTensor(), T.RandomHorizontalFlip(p=1.0),
                                       T.CenterCrop(33), T.Normalize((0.5, 0.4, 0.3), (0.2, 0.25, 0.3))]),
        "uint8_roundtrip": T.Compose([T.Resize((26, 18)), T.ToTensor(), T.ConvertImageDtype(torch.uint8)]),
        # containers with pinned choices
        "random_apply_p1": T.Compose([T.RandomApply([T.Resize((30, 20)), T.RandomVerticalFlip(p=1.0)], p=1.0),
                                      T.CenterCrop(16)]),
        "random_choice_one": T.Compose([T.RandomChoice([T.Resize((21, 13))]), T.PILToTensor()]),
        "erasing_never": T.Compose([T.Resize((28, 28)), T.ToTensor(), T.RandomErasing(p=0.0)]),
        # geometry: nearest, padding modes, CIFAR's RandomCrop(32, padding=4) pinned by a 24x24 input
        "nearest_resize": T.Compose([T.Resize(24, I.NEAREST), T.CenterCrop((19, 23))]),
        "nearest_upscale": T.Compose([T.Resize((45, 70), I.NEAREST)]),
        "cifar_crop_constant": T.Compose([T.Resize((24, 24)), T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(1.0),
                                          T.ToTensor(), T.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))]),
        "cifar_crop_reflect": T.Compose([T.Resize((24, 24)), T.RandomCrop(32, padding=4, padding_mode="reflect")]),
        "pad_edge_symmetric": T.Compose([T.Resize((9, 13)), T.Pad((3, 1, 5, 2), padding_mode="edge"),
                                         T.Pad(6, padding_mode="symmetric")]),
        "pad_fill_rgb": T.Compose([T.Resize((9, 13)), T.Pad((2, 7), fill=(10, 200, 300))]),
        "rotation_17": T.Compose([T.Resize((40, 30)), T.RandomRotation((17, 17))]),
        "rotation_bilinear_expand": T.Compose([T.Resize((33, 21)), T.RandomRotation((-33.5, -33.5), I.BILINEAR,
                                                                                      expand=True, fill=(5, 6, 7))]),
        "rotation_90_center": T.Compose([T.Resize((20, 31)), T.RandomRotation((90, 90), center=(3, 4))]),
        "affine_shear": T.Compose([T.Resize((36, 28)), T.RandomAffine(0, shear=(10, 10, 0, 0))]),
        "affine_all_bicubic": T.Compose([T.Resize((31, 45)), T.RandomAffine((21, 21), scale=(1.3, 1.3),
                                         shear=(-7, -7, 4, 4), interpolation=I.BICUBIC, fill=128)]),
        # colour ops with pinned factors (degenerate ranges, p=1)
        "jitter_brightness": T.Compose([T.Resize((30, 40)), T.ColorJitter(brightness=(1.3, 1.3))]),
        "jitter_contrast": T.Compose([T.Resize((33, 21)), T.ColorJitter(contrast=(1.6, 1.6))]),
        "jitter_saturation": T.Compose([T.Resize((33, 21)), T.ColorJitter(saturation=(0.4, 0.4))]),
        "jitter_hue": T.Compose([T.Resize((33, 21)), T.ColorJitter(hue=(0.1, 0.1))]),
        "jitter_hue_negative": T.Compose([T.Resize((16, 16)), T.ColorJitter(hue=(-0.3, -0.3)), T.ToTensor()]),
        "grayscale_1": T.Compose([T.Resize((20, 30)), T.Grayscale(), T.ToTensor(), T.Normalize((0.1307,), (0.3081,))]),
        "grayscale_3": T.Compose([T.CenterCrop(24), T.Grayscale(num_output_channels=3)]),
        "random_grayscale_p1": T.Compose([T.Resize((20, 30)), T.RandomGrayscale(p=1.0), T.PILToTensor()]),
        "gray_then_geometry": T.Compose([T.Grayscale(), T.Resize((21, 17), I.BICUBIC), T.Pad(3, padding_mode="reflect"),
                                         T.RandomRotation((17, 17), fill=9), T.PILToTensor()]),
        "blur_3_fixed": T.Compose([T.Resize((40, 30)), T.GaussianBlur(3, sigma=(1.1, 1.1))]),
        "blur_5x7_fixed": T.Compose([T.Resize((40, 30)), T.GaussianBlur((5, 7), sigma=(0.6, 0.6))]),
        "posterize_5": T.Compose([T.Resize((30, 30)), T.RandomPosterize(5, p=1.0)]),
        "solarize_128": T.Compose([T.Resize((30, 30)), T.RandomSolarize(128, p=1.0)]),
        "autocontrast": T.Compose([T.Resize((30, 30)), T.RandomAutocontrast(p=1.0)]),
        "equalize": T.Compose([T.Resize((30, 30)), T.RandomEqualize(p=1.0)]),
        "sharpness_2": T.Compose([T.Resize((30, 30)), T.RandomAdjustSharpness(2.0, p=1.0)]),
        "invert": T.Compose([T.Resize((30, 30)), T.RandomInvert(p=1.0), T.ToTensor()]),
        # torchvision refuses only a zero std; a negative one flips the sign
        "normalize_negative_std": T.Compose([T.Resize((13, 11)), T.ToTensor(), T.Normalize((0.5,), (-0.25,))]),
        # values outside [0, 1] wrap in torch's float -> uint8 cast (1802 -> 10)
        "normalize_then_uint8_wraps": T.Compose([T.Resize((9, 14)), T.ToTensor(), T.Normalize((0.5,), (0.2,)),
                                                 T.ConvertImageDtype(torch.uint8)]),
        # RandomResizedCrop's fallback crop of a 1-row image is 0 wide: Pillow
        # resamples that empty crop to black
        "rrc_empty_crop": T.Compose([T.Resize((1, 10)), T.RandomResizedCrop(5, scale=(1.0, 1.0), ratio=(0.25, 0.25))]),
        "gray_image_out": T.Compose([T.Resize((7, 5)), T.Grayscale()]),
        "simclr_pinned": T.Compose([T.Resize((36, 36)), T.RandomApply([T.ColorJitter(saturation=(1.4, 1.4))], p=1.0),
                                    T.RandomGrayscale(p=1.0), T.GaussianBlur(3, sigma=(0.5, 0.5)), T.ToTensor()]),
    }


def augmix_recipes(T, torch):
    """id -> (transforms before AugMix, the AugMix, transforms after): the
    AugMix cases. AugMix's randomness has no degenerate setting, so the
    parity tests pin it to the draws ringfeed made (augmix_reference)."""
    I = T.InterpolationMode
    return {
        "default": ([T.Resize((37, 29))], T.AugMix(), []),
        "sev10_w2_d2": ([T.Resize((64, 80))], T.AugMix(severity=10, mixture_width=2, chain_depth=2), []),
        "basic_ops_nearest": ([T.Resize((50, 50))], T.AugMix(all_ops=False, interpolation=I.NEAREST), []),
        "fill_rgb": ([T.Resize((45, 61))], T.AugMix(fill=[10, 200, 30]), []),
        "nearest_fill_number": ([T.Resize((45, 61))], T.AugMix(severity=10, interpolation=I.NEAREST, fill=128), []),
        "gray": ([T.Resize((40, 33)), T.Grayscale()], T.AugMix(severity=7), [T.PILToTensor()]),
        "tiny_alpha_half": ([T.Resize((3, 2))], T.AugMix(severity=10, alpha=0.5, mixture_width=4), []),
        # torchvision's reference recipe tail (--auto-augment augmix), the crop pinned by a Resize
        "reference_recipe": ([T.Resize((96, 96))], T.AugMix(),
                             [T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(*IMAGENET)]),
    }


AUGMIX_SAMPLES = range(4)  # sample indices per image (seed 11, epoch 0)


def augmix_reference(case, path, draws_of):
    """torchvision's output for `path` through `case` (augmix_recipes'
    triple) with AugMix's draws pinned to ringfeed's: its Dirichlet weights
    through AugMix's _sample_dirichlet hook, its torch.randint draws in
    order. `draws_of(width, height, channels)` returns ringfeed's draws
    (_ringfeed._transform_draws) for AugMix's input."""
    import numpy as np
    import torch
    import torchvision.transforms.autoaugment as A
    from PIL import Image
    before, augmix, after = case
    with Image.open(path) as im:
        img = im.convert("RGB")
    for t in before:
        img = t(img)
    draws = list(draws_of(img.width, img.height, len(img.getbands())))
    width = augmix.mixture_width
    weights = [torch.tensor([draws[0:2]]), torch.tensor([draws[2:2 + width]])]
    ints = iter(draws[2 + width:])

    class Pinned(A.AugMix):
        def _sample_dirichlet(self, params):
            return weights.pop(0)

    pinned = Pinned(augmix.severity, augmix.mixture_width, augmix.chain_depth, augmix.alpha, augmix.all_ops,
                    augmix.interpolation, augmix.fill)
    real_randint, threads = torch.randint, torch.get_num_threads()
    torch.randint = lambda *args, **kwargs: torch.tensor([int(next(ints))])
    torch.set_num_threads(1)  # Contrast's mean: torch's sum order depends on its thread count past 32768 pixels
    try:
        img = pinned(img)
    finally:
        torch.randint = real_randint
        torch.set_num_threads(threads)
    assert next(ints, None) is None, "ringfeed drew more than torchvision used"
    for t in after:
        img = t(img)
    return img if isinstance(img, torch.Tensor) else torch.from_numpy(np.array(img))


# Draw-distribution tests: N draws each, compared with torchvision's by the
# two-sample Kolmogorov-Smirnov statistic at alpha = 0.001.
N = 10000
KS_CRITICAL = 1.95 * (2 / N) ** 0.5


def ks(a, b):
    """Two-sample Kolmogorov-Smirnov statistic."""
    a, b = sorted(a), sorted(b)
    i = j = 0
    d = 0.0
    while i < len(a) and j < len(b):
        x = min(a[i], b[j])
        while i < len(a) and a[i] <= x:
            i += 1
        while j < len(b) and b[j] <= x:
            j += 1
        d = max(d, abs(i / len(a) - j / len(b)))
    return d


def digest(tensor):
    """sha256 of a tensor's (or array's) bytes, with its shape and dtype."""
    import numpy as np
    a = tensor.numpy() if hasattr(tensor, "numpy") else np.asarray(tensor)
    a = np.ascontiguousarray(a)
    return {"shape": list(a.shape), "dtype": str(a.dtype), "sha256": hashlib.sha256(a.tobytes()).hexdigest()}


def reference(transform, path):
    """torchvision's output for `path`, as a tensor (HWC uint8 for an image)."""
    import numpy as np
    import torch
    from PIL import Image
    with Image.open(path) as im:
        out = transform(im.convert("RGB"))
    if not isinstance(out, torch.Tensor):
        a = np.array(out)
        out = torch.from_numpy(a[:, :, None] if a.ndim == 2 else a)  # an "L" image: HW1, as ringfeed gives it
    return out
