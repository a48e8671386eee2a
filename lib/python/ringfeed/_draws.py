"""The indices of one iteration of a torch DataLoader, drawn as its iterator
draws them, and where its generator would stand had that iteration been
left early (a `break`).

ringfeed draws an iteration's indices when it starts; torch's iterator
draws them batch by batch. With shuffle=True, RandomSampler draws its
permutation at its first index and one more permutation (of which it
yields nothing) once it is used up, which torch's iterator reaches only
at the epoch's end. Left early, torch's generator has not made that last
draw, and every later epoch's order follows from that. LeftEarly puts
the generator back where torch's iterator would have left it.
"""
from __future__ import annotations

from .loader import _torch


def draw_order(torch_loader, size, draw_seed=True):
    """(the iteration's indices, batch after batch; a LeftEarly or None).
    As torch's iterator: iter() of the index sampler, then its base seed
    (one int64 from the generator), then the batches."""
    torch = _torch()
    batches = iter(torch_loader._index_sampler)
    if draw_seed:
        torch.empty((), dtype=torch.int64).random_(generator=torch_loader.generator)
    early = LeftEarly.of(torch_loader)
    got = []
    for batch in batches:
        if early is not None and not got:
            early.after_first = early.generator.get_state()
        got.append(list(batch))
    for k, batch in enumerate(got):
        if len(batch) != size and (k != len(got) - 1 or len(batch) > size):
            raise RuntimeError(f"ringfeed.DataLoader: batch {k} of the batch sampler holds {len(batch)} indices, "
                               f"not batch_size={size}: only the last batch may be shorter")
    if early is not None:
        early.finish(len(got))
    return [int(i) for batch in got for i in batch], early


class LeftEarly:
    """For torch's RandomSampler (no replacement, one pass over the data, a
    generator of the user's) in torch's BatchSampler: the generator's
    states before the iteration's first index, after it, and at the end."""

    @classmethod
    def of(cls, torch_loader):
        data = _torch().utils.data
        batch_sampler = torch_loader._index_sampler
        if type(batch_sampler) is not data.BatchSampler:
            return None
        sampler = batch_sampler.sampler
        if (type(sampler) is not data.RandomSampler or sampler.replacement or sampler.generator is None
                or sampler.num_samples != len(sampler.data_source)):
            return None  # other samplers draw as they go, or all at once (README)
        return cls(torch_loader, batch_sampler, sampler)

    def __init__(self, torch_loader, batch_sampler, sampler):
        self.generator = sampler.generator
        self.before = self.generator.get_state()
        self.after_first = self.before
        self.at_end = None
        self._samples = sampler.num_samples
        self._batch_size = batch_sampler.batch_size
        self._drop_last = batch_sampler.drop_last
        workers = torch_loader.num_workers
        # Batches torch's iterator asks its sampler for beyond those it returned.
        self._ahead = (torch_loader.prefetch_factor or 2) * workers if workers > 0 else 0
        self._exhausted_at = None

    def finish(self, batches):
        self.at_end = self.generator.get_state()
        # The request that runs the sampler dry (and draws its last
        # permutation): the one that makes a short last batch, else the
        # one after the last batch.
        short_last = not self._drop_last and self._samples % self._batch_size != 0
        self._exhausted_at = batches if short_last else batches + 1

    def state_after(self, returned):
        """The generator's state had torch's iterator returned `returned`
        batches and been left: its current one unless short of the end, or
        when something drew from it since."""
        torch = _torch()
        now = self.generator.get_state()
        if self.at_end is None or not torch.equal(now, self.at_end):
            return now
        asked = returned + self._ahead
        if asked >= self._exhausted_at:
            return now
        return self.after_first if asked >= 1 else self.before

    def settle(self, returned):
        """The iteration ended after `returned` batches, before its end:
        the generator goes where torch's iterator would have left it."""
        self.generator.set_state(self.state_after(returned))
