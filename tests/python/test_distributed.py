"""rank / world_size: DistributedSampler semantics. Ranks' samples per epoch
partition the dataset (padded by repetition when it does not divide), and
rank/world size default from torch.distributed or RANK/WORLD_SIZE."""
from __future__ import annotations

import collections
import json
import socket
import subprocess
import sys
import time

import pytest
import torch
from torch.utils.data import DistributedSampler

import ringfeed

from conftest import HERE, child_env, sample_digest

# uint8 val output: one sample's pixels depend on its file only, so a digest
# names the sample whatever rank, order or epoch delivered it.
KW = dict(batch_size=16, pipeline="val", size=64, output="uint8", threads=2)


def digest_index(source):
    loader = ringfeed.Loader(source, **KW, shuffle=False, rank=0, world_size=1)
    digests = [sample_digest(img) for images, _ in loader for img in images]
    index = {d: i for i, d in enumerate(digests)}
    assert len(index) == len(digests) == loader.dataset_size, "two samples have the same pixels: pick another seed"
    return index


def rank_samples(source, rank, world, epoch, index, **kw):
    loader = ringfeed.Loader(source, **{**KW, **kw}, rank=rank, world_size=world)
    loader.set_epoch(epoch)
    got = [index[sample_digest(img)] for images, _ in loader for img in images]
    return got, len(loader)


@pytest.mark.parametrize("which", ["divisible", "padded"])
def test_ranks_partition_each_epoch(which, dataset, dataset150):
    source = str((dataset150 if which == "divisible" else dataset) / "train")  # 150 or 200 samples
    index = digest_index(source)
    n, world = len(index), 3
    per_rank = -(-n // world)
    for epoch in (0, 1):
        ranks = [rank_samples(source, r, world, epoch, index, shuffle=True, seed=4) for r in range(world)]
        for r, (samples, batches) in enumerate(ranks):
            assert len(samples) == per_rank, f"rank {r} got {len(samples)} samples, expected {per_rank}"
            assert batches == -(-per_rank // KW["batch_size"]), f"rank {r}: len() {batches}"
        counts = collections.Counter(i for samples, _ in ranks for i in samples)
        assert set(counts) == set(range(n)), f"epoch {epoch}: samples {sorted(set(range(n)) - set(counts))} on no rank"
        repeated = sum(c - 1 for c in counts.values())
        assert repeated == per_rank * world - n, f"epoch {epoch}: {repeated} repeats, expected {per_rank * world - n} (padding)"
        if which == "divisible":
            for a in range(world):
                for b in range(a + 1, world):
                    assert not set(ranks[a][0]) & set(ranks[b][0]), f"epoch {epoch}: ranks {a} and {b} share samples"
        if epoch == 0:
            first = [samples for samples, _ in ranks]
        else:
            assert [samples for samples, _ in ranks] != first, "epoch 1 repeats epoch 0's assignment"


def test_unshuffled_ranks_equal_torch_distributed_sampler(dataset):
    source = str(dataset / "train")
    index = digest_index(source)
    for rank in range(3):
        got, _ = rank_samples(source, rank, 3, 0, index, shuffle=False)
        want = list(DistributedSampler(range(len(index)), num_replicas=3, rank=rank, shuffle=False))
        assert got == want, f"rank {rank}"


def test_rank_from_environment(dataset, monkeypatch):
    source = str(dataset / "train")
    explicit = [l for _, l in ringfeed.Loader(source, **KW, shuffle=True, rank=1, world_size=3)]
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    from_env = ringfeed.Loader(source, **KW, shuffle=True)
    state = from_env.state_dict()
    assert (state["rank"], state["world_size"]) == (1, 3)
    assert len(from_env) == len(explicit)
    got = [l for _, l in from_env]
    assert all(torch.equal(a, b) for a, b in zip(got, explicit)) and len(got) == len(explicit)
    # explicit arguments win over the environment
    assert ringfeed.Loader(source, **KW, rank=0, world_size=1).state_dict()["world_size"] == 1
    monkeypatch.setenv("RANK", "3")
    with pytest.raises(ValueError, match="rank"):
        ringfeed.Loader(source, **KW)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torch_distributed_two_processes(dataset150, tmp_path):
    # torchrun, gloo: each worker builds its Loader without rank/world_size
    # (RANK/WORLD_SIZE are removed from its environment after
    # init_process_group, so they can only come from torch.distributed).
    source = str(dataset150 / "train")
    result = tmp_path / "result.json"
    # --redirects/--tee 2 (stderr to a log file, teed to ours): torch 1.13's
    # torchrun crashes on Python 3.11 with the default "0" (Std is an
    # IntFlag, and 3.11 no longer iterates its zero member).
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc_per_node=2",
           "--redirects=2", "--tee=2", f"--log_dir={tmp_path / 'logs'}",
           "--master_addr=127.0.0.1", f"--master_port={free_port()}",
           str(HERE / "dist_worker.py"), source, str(result)]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=child_env(OMP_NUM_THREADS=1))
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, f"torchrun exited {proc.returncode} after {elapsed:.1f}s\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    with open(result) as f:
        report = json.load(f)
    assert report["ok"], report
    assert report["world_size"] == 2 and report["ranks"] == [0, 1]
    assert report["epochs"] == 2 and report["dataset_size"] == 150
    assert report["per_rank_samples"] == [75, 75]
