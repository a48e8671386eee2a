"""NVIDIA DALI, a CPU-only pipeline (device_id=None): reader -> decoder -> random_resized_crop -> crop_mirror_normalize."""
from . import MEAN, STD

NAME = "DALI (CPU pipeline)"
PACKAGES = ["nvidia-dali-cuda120==2.4.0"]
DIFFERS = ("DALI's decoder (libjpeg-turbo via nvImageCodec) and its own resize filter; reader shuffles through "
           "a 1024-sample buffer, not a full permutation; last batch partial")
PIXELS = "no: DALI's resampling (linear with antialias) is its own, not PIL's"


def make(ctx):
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    @pipeline_def(batch_size=ctx.batch, num_threads=ctx.threads, device_id=None, seed=ctx.seed)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=ctx.source, random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        images = fn.random_resized_crop(images, size=[224, 224])
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD],
                                          mirror=fn.random.coin_flip())
        return images, labels

    p = pipe()
    p.build()
    it = DALIGenericIterator(p, ["x", "y"], reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL,
                             auto_reset=True)

    def epoch(e):
        for (d,) in it:
            yield d["x"], d["y"].reshape(-1)
    return epoch
