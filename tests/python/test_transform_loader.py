"""Every recipe the transform-list issue names runs through
ringfeed.Loader(transform=...) given as torchvision objects, end to end:
each batch slot equals ringfeed.decode(transform=...) for that sample (so
the pinned-parity tests of test_transforms.py carry over to batches), runs
are deterministic whatever the thread count, and the batch is stacked as
the recipe ends."""

import pytest
import torch

import ringfeed
import ringfeed.transforms as RT

tv = pytest.importorskip("torchvision.transforms", reason="the recipes are given as torchvision objects")
I = tv.InterpolationMode
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))

RECIPES = {
    # the PyTorch tuning guides' snippets
    "cifar_resize": (tv.Compose([tv.Resize((224, 224)), tv.ToTensor(), tv.Normalize(mean=[0.5], std=[0.5])]),
                     (3, 224, 224), torch.float32),
    "cifar_crop": (tv.Compose([tv.RandomCrop(32, padding=4), tv.RandomHorizontalFlip(), tv.ToTensor(),
                               tv.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))]), (3, 32, 32),
                   torch.float32),
    "mnist_like": (tv.Compose([tv.Resize((28, 28)), tv.Grayscale(), tv.ToTensor(), tv.Normalize((0.1307,), (0.3081,))]),
                   (1, 28, 28), torch.float32),
    # torchvision's reference recipes
    "ref_ta_wide": (tv.Compose([tv.RandomResizedCrop(176, interpolation=I.BILINEAR), tv.RandomHorizontalFlip(),
                                tv.TrivialAugmentWide(interpolation=I.BILINEAR), tv.PILToTensor(),
                                tv.ConvertImageDtype(torch.float), tv.Normalize(*IMAGENET),
                                tv.RandomErasing(p=0.1)]), (3, 176, 176), torch.float32),
    "ref_ra": (tv.Compose([tv.RandomResizedCrop(224, interpolation=I.BICUBIC), tv.RandomHorizontalFlip(),
                           tv.RandAugment(magnitude=9), tv.PILToTensor(), tv.ConvertImageDtype(torch.float),
                           tv.Normalize(*IMAGENET)]), (3, 224, 224), torch.float32),
    "ref_aa_imagenet": (tv.Compose([tv.RandomResizedCrop(224), tv.RandomHorizontalFlip(),
                                    tv.AutoAugment(tv.AutoAugmentPolicy.IMAGENET), tv.PILToTensor()]),
                        (3, 224, 224), torch.uint8),
    "ref_augmix": (tv.Compose([tv.RandomResizedCrop(176), tv.RandomHorizontalFlip(), tv.AugMix(),
                               tv.PILToTensor(), tv.ConvertImageDtype(torch.float), tv.Normalize(*IMAGENET)]),
                   (3, 176, 176), torch.float32),
    "ref_val_232": (tv.Compose([tv.Resize(232), tv.CenterCrop(224), tv.PILToTensor(),
                                tv.ConvertImageDtype(torch.float), tv.Normalize(*IMAGENET)]), (3, 224, 224),
                    torch.float32),
    # timm-style evaluation at three crop_pcts
    "timm_875": (tv.Compose([tv.Resize(int(224 / 0.875), I.BICUBIC), tv.CenterCrop(224), tv.ToTensor(),
                             tv.Normalize(*IMAGENET)]), (3, 224, 224), torch.float32),
    "timm_95": (tv.Compose([tv.Resize(int(224 / 0.95), I.BICUBIC), tv.CenterCrop(224), tv.ToTensor(),
                            tv.Normalize(*IMAGENET)]), (3, 224, 224), torch.float32),
    # SimCLR-style
    "simclr": (tv.Compose([tv.RandomResizedCrop(96), tv.RandomHorizontalFlip(),
                           tv.RandomApply([tv.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8), tv.RandomGrayscale(p=0.2),
                           tv.GaussianBlur(9, sigma=(0.1, 2.0)), tv.ToTensor()]), (3, 96, 96), torch.float32),
    # no tensor op: uint8 NHWC
    "images_only": (tv.Compose([tv.Resize(40), tv.CenterCrop(32), tv.RandomRotation(10)]), (32, 32, 3), torch.uint8),
}


def _paths(loader_dir):
    ds = ringfeed.ImageFolder(loader_dir, include_hidden=False)
    return [p for p, _ in ds.samples], [label for _, label in ds.samples]


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_each_recipe_runs_through_the_loader_as_decode_says(name, val_dir):
    transform, shape, dtype = RECIPES[name]
    loader = ringfeed.Loader(val_dir, batch_size=8, transform=transform, exact=True, shuffle=False, seed=5,
                             threads=2)
    paths, labels = _paths(val_dir)
    seen = 0
    for images, got_labels in loader:
        assert images.dtype == dtype and tuple(images.shape[1:]) == shape, name
        for k in range(images.shape[0]):
            i = seen + k
            with open(paths[i], "rb") as f:
                want = ringfeed.decode(f.read(), transform=transform, exact=True, seed=5, epoch=0, index=i)
            assert torch.equal(images[k], want), f"{name}: sample {i}"
            assert int(got_labels[k]) == labels[i]
        seen += images.shape[0]
    assert seen == len(paths)


@pytest.mark.parametrize("name", ["ref_ta_wide", "ref_augmix", "simclr", "cifar_crop"])
def test_random_recipes_are_deterministic_whatever_the_threads(name, train_dir):
    transform = RECIPES[name][0]

    def epoch(threads):
        loader = ringfeed.Loader(train_dir, batch_size=16, transform=transform, seed=9, threads=threads)
        loader.set_epoch(2)
        return [(x.clone(), y.clone()) for x, y in loader]

    a, b = epoch(1), epoch(3)
    assert len(a) == len(b) > 0
    for (xa, ya), (xb, yb) in zip(a, b):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


def test_a_recipe_is_shuffled_when_random_and_in_order_when_not(val_dir):
    paths, labels = _paths(val_dir)
    fixed = ringfeed.Loader(val_dir, batch_size=len(paths), transform=RECIPES["timm_875"][0])
    _, y = next(iter(fixed))
    assert y.tolist() == labels
    random = ringfeed.Loader(val_dir, batch_size=len(paths), transform=RECIPES["cifar_crop"][0], seed=1)
    _, y = next(iter(random))
    assert sorted(y.tolist()) == sorted(labels) and y.tolist() != labels


def test_float16_output_for_a_float_recipe_and_not_for_an_image_one(val_dir):
    loader = ringfeed.Loader(val_dir, batch_size=4, transform=RECIPES["timm_875"][0], output="float16")
    x, _ = next(iter(loader))
    assert x.dtype == torch.float16
    with pytest.raises(ValueError, match="does not fit this transform"):
        ringfeed.Loader(val_dir, transform=RECIPES["images_only"][0], output="float32")


def test_an_unsupported_op_and_a_bad_argument_are_value_errors_naming_them(val_dir):
    class Mine(torch.nn.Module):
        def forward(self, img):
            return img

    with pytest.raises(ValueError, match=r"transform 2 \(.*Mine\) is not a transform ringfeed can run; supported: AugMix, "):
        ringfeed.Loader(val_dir, transform=tv.Compose([tv.RandomResizedCrop(64), tv.RandomHorizontalFlip(),
                                                       Mine(), tv.ToTensor()]))
    with pytest.raises(ValueError, match=r"transform 1 \(AugMix.*\).*interpolation.*nearest or bilinear"):
        ringfeed.Loader(val_dir, transform=[tv.CenterCrop(8), tv.AugMix(interpolation=I.BICUBIC)])
    with pytest.raises(ValueError, match=r"transform 1 \(.*Lambda\)"):
        ringfeed.Loader(val_dir, transform=[tv.CenterCrop(8), tv.Lambda(lambda x: x)])
    with pytest.raises(ValueError, match="Kernel size value should be an odd and positive number"):
        ringfeed.Loader(val_dir, transform=[RT.CenterCrop(8), RT.GaussianBlur(4)])
    with pytest.raises(ValueError, match="depends on the image"):
        ringfeed.Loader(val_dir, transform=[tv.Resize(64), tv.ToTensor()])


def test_stats_and_repr_name_the_transform(val_dir):
    loader = ringfeed.Loader(val_dir, batch_size=4, transform=RECIPES["timm_875"][0])
    s = loader.stats()
    assert s["pipeline"] == "transform" and s["transform"].startswith("Resize(size=256")
    assert "transform='Resize(size=256" in repr(loader)
