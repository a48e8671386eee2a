"""A set of real-photo JPEGs of about 500x375 (ImageNet's typical size)
for the perf scripts: crops of the test photos (tests/data/image/photos:
astronaut, coffee, chelsea, hubble, ...; 451x300 to 800x600) at seeded
random places, 80-100% of the largest crop of the target's aspect ratio,
resized to 500x375 (a quarter of them 375x500: little upscaling, which
would smooth away the detail a camera's JPEG holds), saved by Pillow at
quality 88-95 with 4:2:0 subsampling, as Flickr's photos in ImageNet. Real textures, unlike `ringfeed gen`'s
synthetic images, so decode costs and cache sizes are a photo's.

    ensure_photo_set(out, images=3000, classes=10) -> out/train

A complete set already in place (its photo-set.json says so) is reused.
Needs Pillow (Debian's python3-pil).
"""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
PHOTOS = os.path.join(HERE, "..", "..", "tests", "data", "image", "photos")


def ensure_photo_set(out, images=3000, classes=10, seed=1):
    marker = os.path.join(out, "photo-set.json")
    want = {"images": images, "classes": classes, "seed": seed, "version": 2, "complete": True}
    try:
        with open(marker) as fh:
            if json.load(fh) == want:
                return os.path.join(out, "train")
    except (OSError, ValueError):
        pass
    from PIL import Image
    sources = [Image.open(os.path.join(PHOTOS, n)).convert("RGB")
               for n in sorted(os.listdir(PHOTOS)) if n.endswith(".jpg")]
    rng = random.Random(seed)
    for c in range(classes):
        os.makedirs(os.path.join(out, "train", f"n{c:08d}"), exist_ok=True)
    for i in range(images):
        src = sources[i % len(sources)]
        tw, th = (500, 375) if rng.random() < 0.75 else (375, 500)
        # the largest crop of the target's aspect ratio, scaled by 0.8 .. 1
        w, h = src.size
        cw = min(w, h * tw / th) * rng.uniform(0.8, 1.0)
        ch = cw * th / tw
        x, y = rng.uniform(0, w - cw), rng.uniform(0, h - ch)
        img = src.crop((round(x), round(y), round(x + cw), round(y + ch))).resize((tw, th), Image.BICUBIC)
        if rng.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        path = os.path.join(out, "train", f"n{i % classes:08d}", f"photo_{i:05d}.jpg")
        img.save(path, quality=rng.randint(88, 95), subsampling=2)
    with open(marker, "w") as fh:
        json.dump(want, fh)
    return os.path.join(out, "train")
