"""ringfeed.Loader: a drop-in for torch.utils.data.DataLoader over the C++
pipeline. All work runs in C++ threads of this process (no worker processes,
no shared memory, no pickling); the GIL is released while C++ works or waits.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import warnings
from typing import Any, NamedTuple

from . import _ringfeed
from ._checks import choice, flag, int_arg

__all__ = ["Loader", "Batch"]

DEFAULT_MAX_PIXELS = _ringfeed.DEFAULT_MAX_PIXELS  # Pillow's decompression-bomb limit


class Batch(NamedTuple):
    """What iterating a Loader yields: `images, labels = batch` works too.
    images: [B,3,H,W] float32/float16/bfloat16 normalized (output="..._nhwc":
    the same shape in torch.channels_last memory format), or [B,H,W,3] uint8;
    labels: int64 [B]."""
    images: Any
    labels: Any


def _torch():
    """torch, imported on first use: `import ringfeed` works without it.

    A Ctrl-C that lands while torch's C extension initializes comes out of
    `import torch` as RuntimeError("KeyboardInterrupt: ..."): raised here as
    the KeyboardInterrupt it is."""
    try:
        import torch
    except RuntimeError as e:
        if str(e).startswith("KeyboardInterrupt"):
            raise KeyboardInterrupt from e
        raise
    return torch


def _from_dlpack(capsule):
    return _torch().utils.dlpack.from_dlpack(capsule)


def _stream_query(device):
    # Called by C++ when a device batch is freed: the stream current then
    # (0 is torch's default stream, a real stream). None: unknown, and the
    # stream the batch waited on is used.
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return torch.cuda.current_stream(device).cuda_stream


_ringfeed._set_stream_query(_stream_query)


def _distributed_defaults():
    """Rank and world size of an initialized torch.distributed group, else
    (None, None): the C++ sampler then reads RANK/WORLD_SIZE (torchrun) or
    SLURM_PROCID/SLURM_NTASKS, for every front end alike."""
    torch = sys.modules.get("torch")
    if torch is not None:
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    return None, None


def _current_cuda_device():
    # "cuda" without an index means torch's current device, as in torch
    # (torchrun: torch.cuda.set_device(local_rank)); 0 without torch or CUDA.
    try:
        torch = _torch()
    except ImportError:
        return 0
    if not torch.cuda.is_available():
        return 0
    return torch.cuda.current_device()


def _device_index(device):
    if device is None:
        return -1
    if isinstance(device, bool):
        raise ValueError(f"device must be None, 'cuda', 'cuda:N', an int or a torch.device, not {device!r}")
    if isinstance(device, int):
        if device < 0:
            raise ValueError(f"device must be a CUDA ordinal >= 0, not {device}")
        return device
    kind = getattr(device, "type", None)
    if kind is not None:  # torch.device
        if kind == "cpu":
            return -1
        if kind != "cuda":
            raise ValueError(f"device {device!r}: only CUDA devices are supported")
        return _current_cuda_device() if device.index is None else device.index
    if isinstance(device, str):
        if device == "cpu":
            return -1
        if device == "cuda":
            return _current_cuda_device()
        if device.startswith("cuda:") and device[5:].isdigit():
            return int(device[5:])
    raise ValueError(f"device must be None, 'cuda', 'cuda:N', an int or a torch.device, not {device!r}")


# The s3 keys, from the C++ table (io::s3_option_keys): name -> "text",
# "flag" or "tristate" (path_style: True, False or None).
_S3_KEYS = dict(_ringfeed._s3_keys())


def _s3_options(s3):
    """Loader(s3=...): a dict of the keys above, their types checked here
    (the rules that tie them together are C++'s resolve); None when unset."""
    if s3 is None:
        return None
    if not isinstance(s3, dict):
        raise ValueError(f"s3 must be a dict of {', '.join(_S3_KEYS)}, not {type(s3).__name__}")
    out = {}
    for key, value in s3.items():
        kind = _S3_KEYS.get(key)
        if kind is None:
            raise ValueError(f"s3 has no option {key!r}: it takes {', '.join(_S3_KEYS)}")
        if kind == "text":
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise ValueError(f"s3[{key!r}] must be a str, not {type(value).__name__}")
            out[key] = os.fspath(value) if value is not None else None
        else:
            if not (kind == "tristate" and value is None):
                flag(f"s3[{key!r}]", value)
            out[key] = value
    return out


class Loader:
    """Batches of decoded, augmented images from `source` (an ImageFolder
    directory, a .csv/.tsv manifest, tar shards, nfs://server/export/dir, s3://bucket/prefix/ or https:// objects).

    Iterating runs one epoch; the next `for` runs the next one (after a
    `break`, the next `for` starts the following epoch, as DataLoader does).
    Batches come in sampler order and every random choice is keyed by
    (seed, epoch, sample index): output does not depend on threads or timing.

    Memory: host images are views of the loader's batch buffers (zero copy);
    a buffer goes back to the loader when the last tensor viewing it is
    freed. A consumer that keeps batches never stalls the loader: once it
    holds every buffer but the one being filled, further batches are handed
    out as copies (one RuntimeWarning says so), and memory_budget bounds only
    the loader's own buffers. Tensors stay valid after close().

    Files whose header declares more than `max_pixels` pixels (default
    Pillow's limit) are refused before memory is allocated: skipped or
    failed as `on_error` says.

    s3:// sources are configured as the AWS tools are (AWS_ENDPOINT_URL,
    AWS_REGION, AWS_PROFILE and ~/.aws, the credential chain); `s3=` takes
    what should not come from there, first in each chain: a dict of
    endpoint, region, profile, ca_bundle, access_key_id, secret_access_key,
    session_token (str) and anonymous, path_style (bool). It never appears
    in repr() or stats().

    `cache_dir` with `cache="pixels"` keeps every sample's decoded pixels
    on local disk (cache_dir/pixels, shared by the processes of a machine):
    epoch 0 fills it, later epochs and later runs read it instead of
    decoding. Batches are exact mode's, byte for byte (the full decode is
    kept, so fast mode's reduced decode is not used). `cache_bytes` bounds
    it (default: the disk's free space less max(5%, 1 GiB)); stats()["pixel_cache"]
    counts hits, misses and bytes. `cache="bytes"` (the default) caches the
    encoded bytes of remote (NFS) samples instead.

    `decode` says where JPEGs are decoded: "cpu" (libjpeg-turbo on the
    loader's threads), "gpu" (nvJPEG: the GPU's hardware JPEG engines and
    its hybrid decoder, then the crop, resize, flip and ToTensor/Normalize
    on the device; images it cannot take are decoded on the CPU into the
    same batch) or "auto" (the default: the GPU when batches go to a device,
    exact=False and every op has a device kernel, else the CPU).
    decode="gpu" raises ValueError, saying why, with exact=True (the GPU's
    IDCT and chroma upsampling are not libjpeg-turbo's), without device=,
    with a transform op that has no device kernel (naming it), with
    in-memory images or with cache="pixels". stats()["decode_reason"] says
    why it was settled so; stats()["gpu_decode"] where images were decoded
    (the CPU when nvJPEG or the device is missing), by which backend, and
    why some went to the CPU.

    `epochs=N` says the run takes epochs 0 … N-1 and no more: nothing past
    the last one is read (object storage is sent no GET the run will not
    use), and a `for` after it raises RuntimeError. Unset, the next epoch is
    read ahead while one ends.
    """

    def __init__(self, source, batch_size=256, pipeline=None, size=None, exact=False,
                 output=None, device=None, shuffle=None, seed=0, drop_last=False,
                 rank=None, world_size=None, threads=0, io_depth=0, memory_budget=None,
                 on_error="skip", direct=False, cache_dir=None, cache_bytes=None, stream_shards=False,
                 *, transform=None, io="auto", prefetch_batches=0, device_buffers=3, include_hidden=False,
                 max_pixels=DEFAULT_MAX_PIXELS, s3=None, epochs=None, cache="bytes", decode="auto", _samples=None,
                 _pixels=None, _workers=None):
        if isinstance(source, os.PathLike):
            source = os.fspath(source)
        if not isinstance(source, str) or not source:
            raise ValueError(f"source must be a non-empty path or URL (nfs://, s3://, https://), not {source!r}")
        # The rules that tie options together and the defaults that depend on
        # others (transform or preset, output, shuffle, memory_budget, s3's
        # pairs) are settled once, in C++ (ringfeed::resolve); here only
        # Python's types are checked.
        spec, self._transform_ops = "", None
        if transform is not None:
            from .transforms import _joined, _op_specs, follow_installed_torch
            if isinstance(transform, str):
                follow_installed_torch()  # _op_specs does so for objects
                spec = transform
            else:  # parsed once, by C++ (resolve); its errors reworded to name the op
                self._transform_ops = _op_specs(transform)
                spec = _joined(self._transform_ops)
        if pipeline is not None:
            choice("pipeline", pipeline, tuple(_ringfeed._accepted_names("pipeline")))
        if output is not None:
            choice("output", output, tuple(_ringfeed._accepted_names("output")))
        choice("on_error", on_error, tuple(_ringfeed._accepted_names("on_error")))
        choice("io", io, tuple(_ringfeed._accepted_names("io")))
        choice("cache", cache, tuple(_ringfeed._accepted_names("cache")))
        choice("decode", decode, tuple(_ringfeed._accepted_names("decode")))
        batch_size = int_arg("batch_size", batch_size, 1)
        if size is not None:
            size = int_arg("size", size, 1)
        seed = int_arg("seed", seed)
        threads = int_arg("threads", threads)
        io_depth = int_arg("io_depth", io_depth)
        prefetch_batches = int_arg("prefetch_batches", prefetch_batches)
        device_buffers = int_arg("device_buffers", device_buffers, 1)
        max_pixels = int_arg("max_pixels", max_pixels, 1)
        if epochs is not None:
            epochs = int_arg("epochs", epochs, 1)
        for name, value in (("exact", exact), ("drop_last", drop_last),
                            ("direct", direct), ("stream_shards", stream_shards),
                            ("include_hidden", include_hidden)):
            flag(name, value)
        if shuffle is not None:
            flag("shuffle", shuffle)
        device_index = _device_index(device)
        # torch makes the batches' tensors: imported here rather than inside
        # the first next(), which would otherwise spend a second or two in it.
        _torch()

        if rank is None and world_size is None:
            rank, world_size = _distributed_defaults()
        # still unset: C++ reads RANK/WORLD_SIZE or SLURM's (data::sampler), as every front end
        if rank is not None:
            rank = int_arg("rank", rank)
        if world_size is not None:
            world_size = int_arg("world_size", world_size, 1)

        if memory_budget is not None:
            memory_budget = int_arg("memory_budget", memory_budget, 1)
        if cache_bytes is not None:
            cache_bytes = int_arg("cache_bytes", cache_bytes, 1)
        if cache_dir is not None:
            cache_dir = os.fspath(cache_dir)
        s3 = _s3_options(s3)

        self._options = dict(
            source=source, pipeline=pipeline, size=size, exact=exact, output=output, transform=spec,
            batch_size=batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last,
            rank=rank, world_size=world_size, threads=threads, io_depth=io_depth, io=io,
            memory_budget=memory_budget, prefetch_batches=prefetch_batches, on_error=on_error,
            direct=direct, cache_dir=cache_dir or "", cache_bytes=cache_bytes, cache=cache,
            stream_shards=stream_shards, device=device_index, device_buffers=device_buffers, decode=decode,
            include_hidden=include_hidden, max_pixels=max_pixels, s3=s3, epochs=epochs, resume=None,
            workers=_workers,  # DataLoader's num_workers: a cap on threads (resolve)
            # ringfeed.DataLoader's: a torchvision dataset's list, (paths as bytes, labels), or its
            # images in memory, (uint8 array, labels)
            samples=_samples, pixels=_pixels)
        self._device = device_index
        self._settled = None  # what C++ settled: recipe, output, shuffle (set by _open)
        self._lock = threading.Lock()
        self._core = None
        self._core = self._open(None)  # indexes the source and checks the options; no thread yet
        self._epoch = 0          # the epoch the next (or current) iteration runs
        self._want_epoch = None  # set_epoch() or a restart after `break`, applied by the next __iter__
        # The live iterator is the one holding _iter_token; _iter_open: its
        # epoch is under way. No reference to it: a loader and its iterator
        # in a cycle lived (threads, pinned memory) until the garbage collector
        # ran, and then closed in whichever thread that was.
        self._iter_token = 0
        self._iter_open = False
        self._warned_copies = False
        self._kept = None  # (next()'s answer, its tensors made so far): see _next_batch

    def _open(self, resume):
        # Paths go to C++ as bytes (os.fsencode): a name that is not UTF-8,
        # held in a str as os.fsdecode makes it, reaches the file unchanged.
        options = dict(self._options, resume=resume, source=os.fsencode(self._options["source"]),
                       cache_dir=os.fsencode(self._options["cache_dir"]))
        try:
            core = _ringfeed._Loader(options)
            self._settled = dict(recipe=core.recipe, output=core.output, shuffle=core.shuffle)
            return core
        except ValueError as e:
            if self._transform_ops is not None and str(e).startswith("transform spec"):
                from .transforms import _name_the_op
                raise _name_the_op(self._transform_ops, e) from None
            raise
        except RuntimeError as e:
            message = str(e)
            if _ringfeed._is_local_path(self._options["source"]) and not os.path.exists(self._options["source"]) \
                    and not any(c in self._options["source"] for c in "*?[{"):
                raise FileNotFoundError(2, message, self._options["source"]) from None
            raise

    # --- the DataLoader surface ------------------------------------------------------
    def __len__(self):
        return self._live().batches_per_epoch

    def __iter__(self):
        core = self._live()
        if self._iter_open:
            # The previous `for` was left early: start the following epoch, as DataLoader does.
            if self._want_epoch is None:
                self._want_epoch = self._epoch + 1
        if self._want_epoch is not None:
            state = core.state()
            if state["epoch"] != self._want_epoch or state["next_batch"] != 0:
                self._kept = None  # of the run set_epoch stops
                core.set_epoch(self._want_epoch)
            self._want_epoch = None
        self._epoch = core.state()["epoch"]
        self._iter_token += 1
        self._iter_open = True
        return _EpochIterator(self, self._iter_token)

    def set_epoch(self, epoch):
        """The epoch the next iteration runs (DistributedSampler.set_epoch):
        its shuffle and random crops. Takes effect at the next `for`."""
        self._want_epoch = int_arg("epoch", epoch)
        self._epoch = self._want_epoch

    @property
    def epoch(self):
        """The epoch being iterated, or the one the next `for` runs."""
        return self._epoch

    @property
    def dataset_size(self):
        return self._live().dataset_size

    def state_dict(self):
        """Where the loader is: a new Loader with the same options given this
        through load_state_dict() delivers the identical following batches."""
        state = dict(self._live().state())
        if self._want_epoch is not None:
            state["epoch"], state["next_batch"] = self._want_epoch, 0
        state["batch_size"] = self._options["batch_size"]
        return state

    def load_state_dict(self, state):
        """Continues from `state` (from state_dict()): the next `for` resumes
        mid-epoch where it was saved."""
        try:
            resume = {k: int(state[k]) for k in ("seed", "epoch", "next_batch", "rank", "world_size")}
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"state is not a ringfeed.Loader state_dict(): {e}") from None
        if state.get("batch_size", self._options["batch_size"]) != self._options["batch_size"]:
            raise ValueError(f"state was saved with batch_size {state['batch_size']}, "
                             f"this loader has {self._options['batch_size']}")
        old = self._live()
        self._core = self._open(resume)
        self._kept = None
        old.close()
        self._epoch = resume["epoch"]
        self._want_epoch = None
        self._iter_token += 1
        self._iter_open = False

    def stats(self):
        """The loader's counters: the fields of `ringfeed bench --json`
        (stages, bottleneck, skipped, backend, ...)."""
        core = self._live()
        s = json.loads(core.stats_json())
        if self._options["transform"]:
            s["transform"] = self._options["transform"]
        s.update(source=self._options["source"], pipeline=self._settled["recipe"],
                 mode="exact" if self._options["exact"] else "fast", batch=self._options["batch_size"],
                 output=self._settled["output"],
                 device=f"cuda:{self._device}" if core.uses_device else "host", host_reason=core.host_reason,
                 output_made_on="device" if core.converts_on_device else "host")
        return s

    def close(self):
        """Stops the pipeline and joins its threads. Tensors already handed
        out stay valid."""
        core = self._core
        if core is not None:
            core.close()  # (raises, changing nothing, while another thread is in next())
            self._core = None
            self._kept = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        core = getattr(self, "_core", None)
        if core is not None:
            core.close()

    def __repr__(self):
        o = self._options
        size = 224 if o["size"] is None else o["size"]
        recipe = f"transform={o['transform']!r}" if o["transform"] else \
            f"pipeline={self._settled['recipe']!r}, size={size}"
        return f"ringfeed.Loader({o['source']!r}, batch_size={o['batch_size']}, {recipe}, " \
               f"output={self._settled['output']!r})"

    # --- internals ---------------------------------------------------------------------
    def _live(self):
        core = self._core
        if core is None:
            raise RuntimeError("ringfeed.Loader is closed")
        return core

    def _next_batch(self, timeout=0):
        core = self._live()
        # A KeyboardInterrupt while a batch is being made into tensors keeps
        # what was made for the next call: the batch is not lost to Ctrl-C.
        got, made = self._kept if self._kept is not None else (None, {})
        self._kept = None
        if "batch" in made:  # made whole, then interrupted in the caller (DataLoader)
            return made["batch"]
        try:
            if got is None:
                stream = 0
                if self._device >= 0 and core.uses_device:
                    stream = _torch().cuda.current_stream(self._device).cuda_stream
                got = core.next(stream, timeout)
                if got is None:
                    return None
            return self._as_batch(core, got, made)
        except KeyboardInterrupt:
            if got is not None:
                self._kept = (got, made)
            raise

    def _as_batch(self, core, got, made):
        images_capsule, labels_capsule, epoch, number, copy = got
        if "images" not in made:
            made["images"] = _from_dlpack(images_capsule)
        if "labels" not in made:
            made["labels"] = _from_dlpack(labels_capsule)
        images, labels = made["images"], made["labels"]
        if images.is_cuda:  # labels follow the images: pinned (torch's caching host allocator), so no host sync
            labels = labels.pin_memory().to(images.device, non_blocking=True)
        if copy:
            if not self._warned_copies:
                self._warned_copies = True
                warnings.warn(f"ringfeed.Loader: the consumer holds {core.held - 1} of the loader's "
                              f"{core.buffers} batch buffers; batches it keeps from now on are copies",
                              RuntimeWarning, stacklevel=3)
            images = images.clone()  # the view (and its buffer) goes back when this frame drops it
        self._epoch = epoch
        return Batch(images, labels)


class _EpochIterator:
    def __init__(self, loader, token):
        self._loader = loader
        self._token = token
        self._finished = False

    def __iter__(self):
        return self

    def __next__(self):
        if self._finished:
            raise StopIteration
        if self._loader._iter_token != self._token:  # its batches went to the later one: say so
            raise RuntimeError("this iterator of a ringfeed.Loader was ended by a later iter() or "
                               "load_state_dict() on the same loader: it runs one iteration at a time")
        batch = self._loader._next_batch()
        if batch is None:
            self._finished = True
            self._loader._iter_open = False
            self._loader._epoch += 1
            raise StopIteration
        return batch
