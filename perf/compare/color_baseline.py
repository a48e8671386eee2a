#!/usr/bin/python3
"""Baseline for perf/bench/color_bench.cpp: the same colour ops and whole transforms
with torchvision 0.14 on PIL images (Pillow 9.4; gaussian_blur and AugMix run
torch's tensor kernels), one thread, same photo crops and parameters, rows
named `pillow/<op>/.../size:WxH`.

    /usr/bin/python3 perf/compare/color_baseline.py                      # Pillow alone
    build/default/perf/color_bench --benchmark_format=json > /tmp/c.json
    /usr/bin/python3 perf/compare/color_baseline.py --ringfeed /tmp/c.json  # + ratios

Time per op: the fastest of 15 runs, each the mean over a tenth of the calls
timeit.Timer.autorange finds for 0.2 s; ringfeed's: the `min` aggregate of
color_bench's repetitions (the harness adds it), or its only run. Minima,
because this machine is shared: interference only ever adds time. The ratio
is Pillow's time / ringfeed's: > 1 means ringfeed is faster.

Random transforms (RANDOM below) cost what their draws cost, so a minimum
over short batches picks the luckiest draws: for them both sides give the
median of 3 means over >= 300 calls and >= 1 s (Pillow), and the `median`
aggregate of color_bench's repetitions, each a mean over its iterations.
"""
import json
import os
import statistics
import sys
import time
import timeit

import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
PHOTO = os.path.join(HERE, "..", "..", "tests", "data", "image", "photos", "coffee_portrait.jpg")

OPS = [
    ("adjust_brightness/1.3", lambda im: F.adjust_brightness(im, 1.3)),
    ("adjust_contrast/1.3", lambda im: F.adjust_contrast(im, 1.3)),
    ("adjust_saturation/1.3", lambda im: F.adjust_saturation(im, 1.3)),
    ("adjust_hue/0.1", lambda im: F.adjust_hue(im, 0.1)),
    ("adjust_sharpness/2.0", lambda im: F.adjust_sharpness(im, 2.0)),
    ("to_grayscale/1", lambda im: F.to_grayscale(im, 1)),
    ("to_grayscale/3", lambda im: F.to_grayscale(im, 3)),
    ("posterize/4", lambda im: F.posterize(im, 4)),
    ("solarize/128", lambda im: F.solarize(im, 128)),
    ("autocontrast", lambda im: F.autocontrast(im)),
    ("equalize", lambda im: F.equalize(im)),
    ("invert", lambda im: F.invert(im)),
    ("gaussian_blur/3x3/0.1", lambda im: F.gaussian_blur(im, [3, 3], [0.1, 0.1])),
    ("gaussian_blur/9x9/2.0", lambda im: F.gaussian_blur(im, [9, 9], [2.0, 2.0])),
    ("gaussian_blur/23x23/1.0", lambda im: F.gaussian_blur(im, [23, 23], [1.0, 1.0])),
    # AugMix alone: new draws every call (torch's global generator, seeded once)
    ("augmix/default", T.AugMix()),
    ("augmix/severity10_width1", T.AugMix(severity=10, mixture_width=1)),
    ("autoaugment/imagenet", T.AutoAugment()),
    ("autoaugment/cifar10", T.AutoAugment(T.AutoAugmentPolicy.CIFAR10)),
    ("autoaugment/svhn", T.AutoAugment(T.AutoAugmentPolicy.SVHN)),
    ("randaugment/default", T.RandAugment()),
    ("randaugment/m9", T.RandAugment(num_ops=2, magnitude=9)),
    ("trivialaugmentwide", T.TrivialAugmentWide()),
    ("color_jitter/0.4_0.4_0.4_0.1", T.ColorJitter(0.4, 0.4, 0.4, 0.1)),
    ("random_resized_crop/176", T.RandomResizedCrop(176)),
    ("random_crop/200_pad4", T.RandomCrop(200, padding=4)),
    ("to_tensor", T.ToTensor()),
    ("pil_to_tensor", T.PILToTensor()),
    ("pil_to_tensor+convert_image_dtype", T.Compose([T.PILToTensor(), T.ConvertImageDtype(torch.float32)])),
    ("to_tensor+normalize", T.Compose([T.ToTensor(), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])),
    ("to_tensor+random_erasing", T.Compose([T.ToTensor(), T.RandomErasing(p=1)])),
]


RANDOM = ("augmix/", "autoaugment/", "randaugment/", "trivialaugmentwide", "color_jitter/", "random_")


def measure_mean(fn, im):
    fn(im)
    means = []
    for _ in range(3):
        n, t0 = 0, time.perf_counter()
        while n < 300 or time.perf_counter() - t0 < 1.0:
            fn(im)
            n += 1
        means.append((time.perf_counter() - t0) / n)
    return statistics.median(means)


def measure(fn, im):
    t = timeit.Timer(lambda: fn(im))
    n, _ = t.autorange()
    n = max(1, n // 10)
    return min(t.timeit(n) / n for _ in range(15))


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    ringfeed = {}
    if len(sys.argv) == 3 and sys.argv[1] == "--ringfeed":
        with open(sys.argv[2]) as f:
            rows = json.load(f)["benchmarks"]
        aggregated = any("aggregate_name" in b for b in rows)
        for b in rows:  # with --benchmark_repetitions: minima, medians of random ops
            name = b.get("run_name", b["name"]).replace("/real_time", "")
            want = "median" if name.removeprefix("ringfeed/").startswith(RANDOM) else "min"
            if aggregated and b.get("aggregate_name") != want:
                continue
            scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
            ringfeed[name] = b["real_time"] * scale
    photo = Image.open(PHOTO).convert("RGB")
    print(f"{'op':44s} {'pillow us':>10s} {'ringfeed us':>12s} {'ratio':>7s}")
    for w, h in ((224, 224), (375, 500)):
        im = photo.crop((0, 0, w, h))
        im.load()
        for name, fn in OPS:
            row = f"{name}/size:{w}x{h}"
            p = measure_mean(fn, im) if name.startswith(RANDOM) else measure(fn, im)
            r = ringfeed.get("ringfeed/" + row)
            extra = f" {r * 1e6:12.1f} {p / r:7.2f}" if r else ""
            print(f"pillow/{row:37s} {p * 1e6:10.1f}{extra}")


if __name__ == "__main__":
    main()
