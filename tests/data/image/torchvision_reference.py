#!/usr/bin/python3
"""On-the-fly references for tests/image_torchvision_tests.cpp.

    /usr/bin/python3 torchvision_reference.py OUT_DIR

Re-encodes the committed photos into ImageNet-like variants (sizes around
500x375, portrait and landscape, qualities 60-95, 4:2:0 / 4:2:2 / 4:4:4,
baseline and progressive, some grayscale), and for each writes:
  v_NNN.jpg              the variant
  v_NNN.decode.ppm       Pillow: Image.open(f).convert("RGB")
  v_NNN.val.ppm          torchvision: Resize(256) + CenterCrop(224)
  v_NNN.train.ppm        torchvision: F.resized_crop(i, j, h, w, [224, 224]) (+ hflip)
and manifest.txt with one line per variant: "name top left height width flip".
The crop parameters come from torchvision's RandomResizedCrop.get_params with
a seeded torch generator, so they are realistic.
"""
import os
import sys

import numpy as np
import torch
import torchvision
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(1234)
    torch.manual_seed(1234)
    sizes = [(500, 375), (375, 500), (500, 333), (333, 500), (640, 480), (500, 400), (400, 300), (451, 300),
             (300, 451), (500, 500), (497, 371), (213, 160)]
    photos = sorted(n for n in os.listdir(os.path.join(HERE, "photos")) if n.endswith(".jpg"))
    val = T.Compose([T.Resize(256), T.CenterCrop(224)])
    lines = []
    k = 0
    for name in photos:
        with open(os.path.join(HERE, "photos", name), "rb") as f:
            base = Image.open(f).convert("RGB")
        for v in range(8):
            w, h = sizes[int(rng.integers(len(sizes)))]
            # A random crop of the photo with the target aspect, resized to it.
            bw, bh = base.size
            scale = min(bw / w, bh / h) * float(rng.uniform(0.6, 1.0))
            cw, ch = max(1, int(w * scale)), max(1, int(h * scale))
            x0 = int(rng.integers(0, bw - cw + 1))
            y0 = int(rng.integers(0, bh - ch + 1))
            im = base.crop((x0, y0, x0 + cw, y0 + ch)).resize((w, h), Image.LANCZOS)
            if v == 7:
                im = im.convert("L")
            path = os.path.join(out, f"v_{k:03d}.jpg")
            im.save(path, quality=int(rng.integers(60, 96)), subsampling=int(rng.integers(0, 3)),
                    progressive=bool(rng.integers(0, 2)))
            with open(path, "rb") as f:
                rgb = Image.open(f).convert("RGB")
            rgb.save(os.path.join(out, f"v_{k:03d}.decode.ppm"))
            val(rgb).save(os.path.join(out, f"v_{k:03d}.val.ppm"))
            i, j, hh, ww = T.RandomResizedCrop.get_params(rgb, [0.08, 1.0], [3 / 4, 4 / 3])
            flip = int(torch.rand(1) < 0.5)
            tr = F.resized_crop(rgb, i, j, hh, ww, [224, 224], T.InterpolationMode.BILINEAR)
            if flip:
                tr = F.hflip(tr)
            tr.save(os.path.join(out, f"v_{k:03d}.train.ppm"))
            lines.append(f"v_{k:03d} {i} {j} {hh} {ww} {flip}")
            k += 1
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write(f"# torchvision {torchvision.__version__}\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
