"""ringfeed.DataLoader: torch.utils.data.DataLoader's signature, run by
ringfeed's C++ pipeline. Change the import, keep every argument:

    from ringfeed import DataLoader
    loader = DataLoader(datasets.ImageFolder(root, transform=t), batch_size=256, shuffle=True,
                        num_workers=8, pin_memory=True)

What runs natively: torchvision's ImageFolder, DatasetFolder and ImageNet
read with its default loader, any dataset whose `samples` (or `imgs`) is a
list of (path, int) read with torchvision's default loader, Subsets of
these, and a path or URL string (anything ringfeed.Loader takes). The
dataset's transform is translated op by op (ringfeed.transforms.to_spec).

Sampling is torch's own: the arguments build torch's DataLoader (which
checks them, with torch's exceptions and wording), and each iteration draws
its indices from that loader's sampler exactly as torch's iterator does
(the same draws from the same generator, in the same order), so the
batches hold the same samples in the same order as torch's. Those indices
go to C++, which reads, decodes and transforms them in its threads.

Anything else (a dataset with its own __getitem__, a transform op ringfeed
cannot run, a target_transform, collate_fn or worker_init_fn) gets torch's
own DataLoader built with the same arguments, and one UserWarning naming
the reason; strict=True raises ValueError with it instead.
"""
from __future__ import annotations

import base64
import os
import warnings

from . import _ringfeed
from ._checks import choice, flag, int_arg
from ._datasets import fingerprint, native_source
from ._draws import draw_order
from .loader import Loader, _torch

__all__ = ["DataLoader"]

class DataLoader:
    """torch.utils.data.DataLoader(dataset, ...) over ringfeed: see the
    module's doc. `backend` is "ringfeed" or "torch"; `fallback_reason`
    says why torch's (None natively).

    ringfeed's own arguments: seed (augmentation randomness, keyed by
    (seed, iteration, position); None: the generator's initial seed, else
    torch's, which torch.manual_seed sets), device (batches uploaded on
    ringfeed's CUDA stream, as Loader's), exact (torchvision-exact resizes),
    threads (0 or None: this rank's share of the CPUs it may use, within
    the cgroup quota and among the local ranks; num_workers > 0 caps it),
    memory_budget (bytes of batch buffers), cache_dir + cache="pixels"
    (decoded pixels kept on local disk: epochs after the first skip the
    decode; cache_bytes bounds it), decode ("auto", "cpu" or "gpu": where
    JPEGs are decoded, as Loader's; "gpu" needs device=), output (None:
    what the transform ends with; for a transform ending with a float
    tensor "float16", "bfloat16" or a "_nhwc" name, as Loader's: NHWC is
    torch.channels_last memory format; torch's fallback keeps the
    transform's float32 and its warning says so), on_error ("fail", as
    torch's: a file that cannot be read or decoded raises RuntimeError
    naming it, after the batches before it; "skip": it is left out, named
    in stats()["skipped"], and its batch comes out one sample short),
    strict (raise instead of falling back).

    num_workers and persistent_workers are accepted and checked as torch
    checks them; the work runs in ringfeed's threads in this process, never
    in worker processes. prefetch_factor sizes the batches prepared ahead
    (prefetch_factor x max(num_workers, 1)); timeout bounds the wait for
    one batch; pin_memory gives pinned host tensors.
    """

    def __new__(cls, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                persistent_workers=False, pin_memory_device="",
                seed=None, device=None, exact=False, threads=None, memory_budget=None, strict=False,
                cache_dir=None, cache="bytes", cache_bytes=None, decode="auto", output=None, on_error="fail"):
        flag("strict", strict)
        # torch's loader raises on a file it cannot read, and so does this one
        # unless told to leave such files out (stats()["skipped"] names them)
        choice("on_error", on_error, tuple(_ringfeed._accepted_names("on_error")))
        if output is not None:
            choice("output", output, tuple(_ringfeed._accepted_names("output")))
        flag("exact", exact)
        choice("decode", decode, tuple(_ringfeed._accepted_names("decode")))  # also when torch's runs instead
        if seed is not None:
            seed = int_arg("seed", seed)
        threads = 0 if threads is None else int_arg("threads", threads)
        if memory_budget is not None:
            memory_budget = int_arg("memory_budget", memory_budget, 1)
        torch_args = dict(batch_size=batch_size, shuffle=shuffle, sampler=sampler, batch_sampler=batch_sampler,
                          num_workers=num_workers, collate_fn=collate_fn, pin_memory=pin_memory,
                          drop_last=drop_last, timeout=timeout, worker_init_fn=worker_init_fn,
                          multiprocessing_context=multiprocessing_context, generator=generator,
                          prefetch_factor=prefetch_factor, persistent_workers=persistent_workers,
                          pin_memory_device=pin_memory_device)

        is_path = isinstance(dataset, (str, os.PathLike))
        # torch checks the arguments first, with its own exceptions and words
        torch_loader = _torch_loader(_SourceIndex(os.fspath(dataset), 1) if is_path else dataset, torch_args,
                                     native=True)
        if seed is None:
            seed = (generator.initial_seed() if generator is not None else _torch().initial_seed()) & (2**63 - 1)
        per_batch = getattr(batch_sampler, "batch_size", None) if batch_sampler is not None else batch_size
        prefetch = prefetch_factor * max(num_workers, 1) if isinstance(prefetch_factor, int) else 0
        # num_workers > 0 states the CPUs the script gives data: threads = min(N, this rank's share),
        # settled in C++ (resolve); 0, torch's default, lets ringfeed decide
        workers = num_workers if num_workers > 0 else None
        if is_path:  # what Loader reads, with its default recipe
            reason = _unsupported_arguments(torch_args, torch_loader)
            if reason is not None:
                raise ValueError(f"ringfeed.DataLoader over a path or URL runs natively or not at all: {reason}")
            source = os.fspath(dataset)
            core = Loader(source, batch_size=per_batch, shuffle=False, seed=seed, exact=exact, device=device,
                          rank=0, world_size=1, threads=threads, memory_budget=memory_budget,
                          prefetch_batches=prefetch, _workers=workers, cache_dir=cache_dir, cache=cache,
                          cache_bytes=cache_bytes, decode=decode, output=output, on_error=on_error)
            return cls._native(_SourceIndex(source, core.dataset_size), torch_args, core, None)

        reason, found = native_source(dataset)
        if reason is None:
            reason = _unsupported_arguments(torch_args, torch_loader)
        if reason is not None:
            if strict:
                raise ValueError(f"ringfeed.DataLoader cannot run this natively: {reason}")
            fallback = _torch_loader(dataset, torch_args)
            unapplied = [f"{k}={v!r}" for k, v in (("output", output), ("on_error", on_error))
                         if v is not None and v != "fail"]
            unapplied = f" ({', '.join(unapplied)} {'is' if len(unapplied) == 1 else 'are'} not applied)" \
                if unapplied else ""
            warnings.warn(f"ringfeed.DataLoader: using torch's DataLoader: {reason}{unapplied}", UserWarning,
                          stacklevel=2)
            fallback.backend = "torch"
            fallback.fallback_reason = reason
            return fallback

        core_args = dict(batch_size=per_batch, exact=exact, device=device, shuffle=False, seed=seed,
                         drop_last=False, rank=0, world_size=1, threads=threads, memory_budget=memory_budget,
                         prefetch_batches=prefetch, _workers=workers, cache_dir=cache_dir, cache=cache,
                         cache_bytes=cache_bytes, decode=decode, output=output, on_error=on_error)
        self = cls._native(dataset, torch_args, _open_core(found, core_args), torch_loader, found)
        self._core_args = core_args
        self._fingerprint = fingerprint(dataset)
        return self

    @classmethod
    def _native(cls, dataset, torch_args, core, torch_loader, found=None):
        self = object.__new__(cls)
        self._fingerprint = None  # (the dataset's transform, samples, data): checked at each iter()
        self._index_map = found.index_map if found is not None else None
        self._channels = found.channels if found is not None else None
        if torch_loader is None:
            torch_loader = _torch_loader(dataset, torch_args, native=True)
        self._torch_loader = torch_loader
        self._core = core
        self._timeout = torch_args["timeout"]
        self._pin = bool(torch_args["pin_memory"])
        self._iteration = 0      # iterations started: ringfeed's epoch (augmentation key)
        self._token = 0          # the live iterator's
        self._resume = None      # load_state_dict(): (order, first batch) for the next iteration
        self._position = None    # (iteration, order, next batch) of the live iteration
        self._left_early = None  # its _draws.LeftEarly: torch's generator after a break
        # torch's iterator draws its base seed when made; with persistent
        # workers it is made once and only reset for later epochs.
        self._finished = False   # the live iteration delivered its last batch
        self._persistent = bool(torch_args["persistent_workers"]) and torch_args["num_workers"] > 0
        self._seed_drawn = False
        self.backend = "ringfeed"
        self.fallback_reason = None
        return self

    def __init__(self, *args, **kwargs):
        pass  # __new__ built it

    # --- torch's attributes --------------------------------------------------------------
    def __getattr__(self, name):
        if name in _TORCH_ATTRIBUTES:
            return getattr(self.__dict__.get("_torch_loader"), name)
        raise AttributeError(f"'DataLoader' object has no attribute {name!r}")

    def __len__(self):
        return len(self._torch_loader)

    def __iter__(self):
        if self._fingerprint is not None and fingerprint(self._torch_loader.dataset) != self._fingerprint:
            self._reopen()
        core = self._core._live()
        if self._left_early is not None and not self._finished and self._position is not None:
            self._left_early.settle(self._position[2])  # the last iteration was left early
        self._left_early = None
        if self._resume is not None:
            order, first = self._resume
        else:
            draw_seed = not (self._persistent and self._seed_drawn)
            order, self._left_early = draw_order(self._torch_loader, self._core._options["batch_size"], draw_seed)
            first = 0
            self._seed_drawn = True
            if self._index_map is not None:  # a Subset of images in memory: indices into the whole array
                order = [self._index_map[i] for i in order]
        iteration = self._iteration
        core.set_order(iteration, _torch().as_tensor(order, dtype=_torch().int64).numpy(), first)
        self._resume = None
        self._iteration = iteration + 1
        self._position = [iteration, order, first]
        self._finished = False
        self._token += 1
        return _Iterator(self, self._token)

    def _reopen(self):
        """The dataset's transform (progressive resizing) or contents changed
        since the last iteration: the C++ side is opened again for them, as
        torch's workers would see them."""
        dataset = self._torch_loader.dataset
        reason, found = native_source(dataset)
        if reason is not None:
            raise RuntimeError(f"ringfeed.DataLoader: the dataset changed and cannot run natively any more "
                               f"({reason}); make a new DataLoader")
        self._core._live()
        core = _open_core(found, self._core_args)
        self._core.close()
        self._core, self._index_map, self._channels = core, found.index_map, found.channels
        self._fingerprint = fingerprint(dataset)
        self._token += 1

    def state_dict(self):
        """Where the loader is: load_state_dict() on a DataLoader made with
        the same arguments continues with the same batches (the current
        iteration's indices are part of the state, and the `generator`'s
        state the later iterations draw from; without a generator they draw
        from torch's global RNG, which a checkpoint saves itself)."""
        iteration, order, first = self._iteration, None, 0  # before any iteration
        if self._resume is not None:
            order, first = self._resume
        elif self._position is not None:
            iteration, order, first = self._position
            if first >= -(-len(order) // self._core._options["batch_size"]) or self._finished:
                iteration, order, first = iteration + 1, None, 0  # over: a resumed loader starts the next one
        state = {"iteration": iteration, "order": None if order is None else list(order), "next_batch": first,
                 "batch_size": self._core._options["batch_size"]}
        generator = self._torch_loader.generator
        if generator is not None:  # the later iterations' draws (a restarted script seeds it anew)
            held = generator.get_state()
            if order is None and self._left_early is not None and not self._finished and self._position is not None:
                held = self._left_early.state_after(self._position[2])  # as the next iter() will settle it
            state["generator"] = base64.b64encode(held.numpy().tobytes()).decode("ascii")
        return state

    def load_state_dict(self, state):
        """The next `for` continues where `state` (from state_dict()) was."""
        try:
            iteration, order, first = int(state["iteration"]), state["order"], int(state["next_batch"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"state is not a ringfeed.DataLoader state_dict(): {e}") from None
        if state.get("batch_size", self._core._options["batch_size"]) != self._core._options["batch_size"]:
            raise ValueError(f"state was saved with batch_size {state['batch_size']}, "
                             f"this loader has {self._core._options['batch_size']}")
        generator = self._torch_loader.generator
        if state.get("generator") is not None and generator is not None:
            try:
                raw = base64.b64decode(state["generator"], validate=True)
                generator.set_state(_torch().frombuffer(bytearray(raw), dtype=_torch().uint8))
            except (ValueError, TypeError, RuntimeError) as e:
                raise ValueError(f"state's generator is not a torch.Generator state: {e}") from None
        self._token += 1  # an iterator of before ends
        self._left_early = None
        self._finished = False
        # torch's persistent iterator drew its base seed at the first iteration
        self._seed_drawn = iteration > 0 or order is not None
        self._iteration = iteration
        self._position = None
        self._resume = None if order is None else ([int(i) for i in order], first)

    def stats(self):
        return self._core.stats()

    def close(self):
        self._core.close()

    def __repr__(self):
        return f"ringfeed.DataLoader({self._torch_loader.dataset!r}, batch_size={self._torch_loader.batch_size})"


_TORCH_ATTRIBUTES = frozenset((
    "dataset", "batch_size", "sampler", "batch_sampler", "drop_last", "num_workers", "collate_fn", "pin_memory",
    "timeout", "worker_init_fn", "multiprocessing_context", "generator", "prefetch_factor", "persistent_workers",
    "pin_memory_device"))


class _Iterator:
    def __init__(self, loader, token):
        self._loader = loader
        self._token = token
        self._done = False

    def __iter__(self):
        return self

    def __next__(self):
        dl = self._loader
        if self._done:
            raise StopIteration
        if dl._token != self._token:
            raise RuntimeError("this iterator of a ringfeed.DataLoader was ended by a later iter() or "
                               "load_state_dict() on the same loader: it runs one iteration at a time")
        try:
            batch = dl._core._next_batch(dl._timeout)
        except TimeoutError:
            raise RuntimeError(f"DataLoader timed out after {dl._timeout} seconds") from None
        if batch is None:
            self._done = True
            dl._finished = True
            raise StopIteration
        dl._position[2] += 1
        try:
            images, labels = batch  # [B, C, H, W] as the transform ends (float32, or uint8 after PILToTensor)
            if dl._channels is not None and images.shape[1] != dl._channels:  # an L image ran as (v, v, v)
                images = images[:, :dl._channels].contiguous()
            if dl._pin and not images.is_cuda and _torch().cuda.is_available():
                if not images.is_pinned():
                    images = images.pin_memory()
                labels = labels.pin_memory()
            return [images, labels]  # what default_collate makes of (image, target) pairs
        except KeyboardInterrupt:  # Ctrl-C while it was finished: the next call returns it
            dl._position[2] -= 1
            dl._core._kept = (None, {"batch": batch})
            raise


class _SourceIndex:
    """A path or URL given as the dataset: its samples' indices, for torch's samplers."""

    def __init__(self, source, size):
        self.source = source
        self._size = size

    def __len__(self):
        return self._size

    def __getitem__(self, index):
        raise TypeError("ringfeed.DataLoader reads this source in C++; it has no Python __getitem__")

    def __repr__(self):
        return repr(self.source)


def _open_core(found, core_args):
    return Loader(found.source, transform=found.spec, _samples=found.samples, _pixels=found.pixels, **core_args)


def _torch_loader(dataset, args, native=False):
    """torch's DataLoader with the caller's arguments (prefetch_factor left
    out when None: torch 1.13's default is 2 and it refuses None). native:
    it only checks the arguments and draws indices, so its warning about
    more worker processes than CPUs does not apply: none is started."""
    torch = _torch()
    kwargs = dict(args)
    if kwargs["prefetch_factor"] is None:
        del kwargs["prefetch_factor"]
    if not native:
        return torch.utils.data.DataLoader(dataset, **kwargs)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="This DataLoader will create")
        return torch.utils.data.DataLoader(dataset, **kwargs)


def _unsupported_arguments(args, torch_loader):
    if args["collate_fn"] is not None:
        return "collate_fn is set: ringfeed stacks samples itself (default_collate's output)"
    if args["worker_init_fn"] is not None:
        return "worker_init_fn is set: ringfeed runs no worker processes to initialize"
    if args["batch_size"] is None and args["batch_sampler"] is None:
        return "batch_size=None (samples one by one, not batched)"
    try:
        len(torch_loader._index_sampler)
    except TypeError:
        return "the sampler has no len(): ringfeed draws an iteration's indices when it starts, and they must end"
    batch_sampler = args["batch_sampler"]
    if batch_sampler is not None and type(batch_sampler) is not _torch().utils.data.BatchSampler:
        return (f"batch_sampler is a {type(batch_sampler).__name__}: ringfeed runs torch's BatchSampler, "
                "whose batches all have batch_size indices")
    return None
