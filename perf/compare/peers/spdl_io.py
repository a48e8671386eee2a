"""SPDL's ImageNet-style pipeline with its own decode: spdl.io demux + decode with an FFmpeg
crop/scale/hflip filter per image, convert_frames into one batch buffer, normalize in torch.

Untested where spdl.io cannot load (see skip()): its wheels link FFmpeg 4-9 shared libraries
(libavutil, libavformat, libavfilter, libavdevice, ...) and do not bundle them.
"""
from . import MEAN, STD, samples

NAME = "SPDL (spdl.io decode)"
PACKAGES = ["spdl==0.8.0"]
DIFFERS = ("FFmpeg decode; crop=...,scale=224:224:flags=bilinear,hflip filter per image (crop box from "
           "torchvision's RandomResizedCrop.get_params on the header's size); normalize in torch per batch")
PIXELS = "no: FFmpeg's JPEG decoder and swscale's bilinear differ from libjpeg-turbo + PIL's resampling"


def skip(ctx):
    """Why spdl.io cannot decode here, or None."""
    try:
        import spdl.io
        spdl.io.decode_packets(spdl.io.demux_image(samples(ctx.source)[0][0]))
    except Exception as e:  # libspdl's message names every FFmpeg soname it tried
        import re
        missing = re.findall(r"_spdl_(ffmpeg\d): (lib[\w.-]+\.so\.\d+): cannot open", str(e))
        if missing:
            return ("spdl.io's libspdl finds no FFmpeg it links (4-9; its wheel bundles none): missing "
                    + ", ".join(f"{so} ({v})" for v, so in missing))
        return f"spdl.io cannot decode: {str(e).splitlines()[0][:600]}"
    return None


def make(ctx):
    import random
    import spdl.io
    import torch
    import torchvision.transforms as T
    from PIL import Image
    from spdl.dataloader import DataLoader
    items = samples(ctx.source)
    mean = torch.tensor(MEAN).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD).view(1, 3, 1, 1) * 255

    def load(i):
        path, label = items[i]
        with Image.open(path) as header:  # the size only: nothing decoded
            top, left, h, w = T.RandomResizedCrop.get_params(header, (0.08, 1.0), (3 / 4, 4 / 3))
        flip = ",hflip" if random.random() < 0.5 else ""
        desc = f"crop={w}:{h}:{left}:{top},scale=224:224:flags=bilinear{flip},format=rgb24"
        return spdl.io.decode_packets(spdl.io.demux_image(path), filter_desc=desc), label

    def batch(got):
        x = spdl.io.to_torch(spdl.io.convert_frames([f for f, _ in got]))  # N H W C uint8
        return (x.permute(0, 3, 1, 2).float() - mean) / std, torch.tensor([y for _, y in got])

    def epoch(e):
        order = torch.randperm(len(items), generator=torch.Generator().manual_seed(ctx.seed + e)).tolist()
        return DataLoader(order, preprocessor=load, batch_size=ctx.batch, aggregator=batch,
                          num_threads=ctx.threads, buffer_size=3)
    return epoch
