"""Determinism: every random choice is keyed by (seed, epoch, sample index),
so batches do not depend on threads; epochs differ; state_dict() resumes
mid-epoch with identical batches."""
from __future__ import annotations

import json
import pickle

import pytest
import torch

import ringfeed

from conftest import assert_same_batches, epoch_batches

KW = dict(batch_size=32, pipeline="train", size=128, seed=7)  # fast mode; 200 images -> 7 batches


def two_epochs(train_dir, **kw):
    loader = ringfeed.Loader(train_dir, **{**KW, **kw})
    assert loader.epoch == 0
    first = epoch_batches(loader)
    assert loader.epoch == 1
    second = epoch_batches(loader)
    assert loader.epoch == 2
    loader.close()
    return first, second


@pytest.fixture(scope="module")
def reference(train_dir):
    """Epochs 0 and 1 of KW with threads=2."""
    return two_epochs(train_dir, threads=2)


def test_same_seed_same_batches_across_thread_counts(train_dir, reference):
    a0, a1 = two_epochs(train_dir, threads=1)
    b0, b1 = reference
    assert len(a0) == 7 and a0[-1][0].shape[0] == 200 - 6 * 32
    assert_same_batches(b0, a0, "epoch 0, threads 2 vs 1")
    assert_same_batches(b1, a1, "epoch 1, threads 2 vs 1")
    # io backend and depth do not matter either
    c0 = epoch_batches(ringfeed.Loader(train_dir, **KW, threads=2, io="pread", io_depth=3))
    assert_same_batches(c0, a0, "epoch 0, pread depth 3 vs io_uring")


def test_epochs_and_seeds_differ(train_dir, reference):
    e0, e1 = reference
    labels0 = torch.cat([l for _, l in e0])
    labels1 = torch.cat([l for _, l in e1])
    assert not torch.equal(labels0, labels1), "epoch 1 has epoch 0's order"
    assert torch.equal(labels0.sort().values, labels1.sort().values), "an epoch is a permutation of the dataset"
    assert not torch.equal(e0[0][0], e1[0][0]), "epoch 1 has epoch 0's pixels"
    other = epoch_batches(ringfeed.Loader(train_dir, **{**KW, "seed": 8}, threads=2))
    assert not torch.equal(torch.cat([l for _, l in other]), labels0), "seed 8 gives seed 7's order"


def test_train_shuffle_false_pixels_differ_per_epoch(train_dir):
    # Without shuffle the order is fixed but the random crops still change per epoch.
    e0, e1 = two_epochs(train_dir, threads=2, shuffle=False)
    assert all(torch.equal(a[1], b[1]) for a, b in zip(e0, e1))
    assert not torch.equal(e0[0][0], e1[0][0])


def test_set_epoch(train_dir, reference):
    _, e1 = reference
    loader = ringfeed.Loader(train_dir, **KW, threads=2)
    loader.set_epoch(1)
    assert loader.epoch == 1
    assert loader.state_dict()["epoch"] == 1 and loader.state_dict()["next_batch"] == 0
    assert_same_batches(epoch_batches(loader), e1, "set_epoch(1)")
    # set_epoch back to 1 after running it: the same epoch again
    loader.set_epoch(1)
    assert_same_batches(epoch_batches(loader), e1, "set_epoch(1) again")


def test_break_starts_next_epoch(train_dir, reference):
    # As with DataLoader: leaving a `for` early, the next `for` runs the next epoch.
    e0, e1 = reference
    loader = ringfeed.Loader(train_dir, **KW, threads=2)
    for i, (images, labels) in enumerate(loader):
        assert torch.equal(images, e0[i][0])
        if i == 2:
            break
    assert_same_batches(epoch_batches(loader), e1, "epoch after a break")


def test_an_iterator_a_later_one_ended_says_so(train_dir, reference):
    # It stopped as if its epoch were over: an outer loop over one iterator
    # with an inner one took 1 of 8 batches, zip(L, L) gave no pair, no error.
    e0, e1 = reference
    loader = ringfeed.Loader(train_dir, **KW, threads=2)
    first = iter(loader)
    assert torch.equal(next(first)[0], e0[0][0])
    second = iter(loader)  # the next epoch, as after a break
    assert torch.equal(next(second)[0], e1[0][0])
    with pytest.raises(RuntimeError, match="ended by a later iter"):
        next(first)
    assert torch.equal(next(second)[0], e1[1][0])


def test_resume_mid_epoch(train_dir):
    k = 3
    original = ringfeed.Loader(train_dir, **KW, threads=2)
    it = iter(original)
    head = [(x.clone(), y.clone()) for _, (x, y) in zip(range(k), it)]
    state = original.state_dict()
    assert state["epoch"] == 0 and state["next_batch"] == k, state
    assert state["seed"] == KW["seed"]

    # The state is plain data: JSON and pickle round trips keep it.
    state_json = json.loads(json.dumps(state))
    assert pickle.loads(pickle.dumps(state)) == state
    assert state_json == state

    rest = [(x.clone(), y.clone()) for x, y in it]
    following = epoch_batches(original)
    assert len(head) + len(rest) == len(original) == 7

    resumed = ringfeed.Loader(train_dir, **KW, threads=1)
    resumed.load_state_dict(state_json)
    assert resumed.epoch == 0
    assert resumed.state_dict()["next_batch"] == k
    assert_same_batches(epoch_batches(resumed), rest, "rest of epoch 0 after resume")
    assert resumed.epoch == 1
    assert_same_batches(epoch_batches(resumed), following, "epoch 1 after resume")

    # Resuming an already-iterated loader in place works too.
    original.load_state_dict(state)
    assert_same_batches(epoch_batches(original), rest, "in-place load_state_dict")


def test_resume_at_epoch_boundary(train_dir, reference):
    _, e1 = reference
    loader = ringfeed.Loader(train_dir, **KW, threads=2)
    epoch_batches(loader)
    state = loader.state_dict()
    assert state["epoch"] == 1 and state["next_batch"] == 0
    fresh = ringfeed.Loader(train_dir, **KW, threads=2)
    fresh.load_state_dict(state)
    assert_same_batches(epoch_batches(fresh), e1, "resume at the start of epoch 1")


def test_load_state_dict_rejects_mismatch(train_dir):
    loader = ringfeed.Loader(train_dir, **KW, threads=2)
    state = loader.state_dict()
    other = ringfeed.Loader(train_dir, **{**KW, "batch_size": 16}, threads=2)
    try:
        other.load_state_dict(state)
    except ValueError as e:
        assert "batch_size" in str(e)
    else:
        raise AssertionError("a state saved with batch_size 32 was accepted by a batch_size 16 loader")
    try:
        loader.load_state_dict({"epoch": 1})
    except ValueError:
        pass
    else:
        raise AssertionError("an incomplete state was accepted")


def test_len_and_drop_last(train_dir):
    assert len(ringfeed.Loader(train_dir, batch_size=32, threads=2)) == 7
    dropping = ringfeed.Loader(train_dir, batch_size=32, threads=2, drop_last=True, size=64)
    assert len(dropping) == 6
    batches = epoch_batches(dropping)
    assert len(batches) == 6 and all(x.shape[0] == 32 for x, _ in batches)
    assert dropping.dataset_size == 200
