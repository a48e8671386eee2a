"""Every front end settles its options in one C++ step (ringfeed::resolve):
Python's Loader and decode, and the CLI, give the same defaults and refuse
the same contradictions, and stats() says why each default has its value."""
import json

import pytest

import ringfeed
from conftest import run_cli

BIG_BATCH = 1024  # 1024 × 224·224·3 float32 = 588 MiB a slab: 4 slabs exceed 1 GiB


def test_a_transform_and_a_preset_together_are_refused_by_loader_and_decode(val_dir):
    with pytest.raises(ValueError, match="give either transform or pipeline/size, not both"):
        ringfeed.Loader(val_dir, transform="CenterCrop(8)", size=64)
    with pytest.raises(ValueError, match="give either transform or pipeline/size, not both"):
        ringfeed.Loader(val_dir, transform="CenterCrop(8)", pipeline="val")
    with pytest.raises(ValueError, match="give either transform or pipeline/size, not both"):
        ringfeed.decode(b"\xff\xd8", pipeline="val", transform="CenterCrop(8)")


def test_stats_give_the_reason_for_each_default(val_dir):
    s = ringfeed.Loader(val_dir, batch_size=4, pipeline="val").stats()
    assert s["shuffle_reason"] == "the val preset reads in dataset order"
    assert s["memory_budget"] == 1 << 30
    assert s["memory_budget_reason"].startswith("1 GiB: room for 4 batch slabs of")
    assert "pipeline_reason" not in s  # given, so not settled
    t = ringfeed.Loader(val_dir, batch_size=4, transform="RandomResizedCrop(32); ToTensor()").stats()
    assert t["shuffle_reason"] == "the transform draws random parameters"
    import torch
    import ringfeed.transforms as RT
    # the torch whose arithmetic the ops follow: the one imported here
    assert t["transform_reason"] == "torchvision's arithmetic as on " + RT.follow_installed_torch()
    assert t["transform_reason"].startswith(f"torchvision's arithmetic as on torch {torch.__version__} (")
    given = ringfeed.Loader(val_dir, batch_size=4, shuffle=False, memory_budget=1 << 28).stats()
    assert "shuffle_reason" not in given and "memory_budget_reason" not in given
    assert given["pipeline_reason"] == "no transform or preset given: train"


def test_the_memory_default_grows_past_1_gib_for_large_batches(val_dir):
    # nothing is allocated before the first batch: stats() reads the settled options
    loader = ringfeed.Loader(val_dir, batch_size=BIG_BATCH, pipeline="val")
    s = loader.stats()
    loader.close()
    assert s["memory_budget"] == 4 * BIG_BATCH * 224 * 224 * 3 * 4
    assert s["memory_budget_reason"].startswith("4 batch slabs of 588 MiB: more than 1 GiB")


def test_python_and_the_cli_settle_the_same_defaults(val_dir):
    python = ringfeed.Loader(val_dir, batch_size=8, pipeline="val", size=64).stats()
    cli = json.loads(run_cli("bench", val_dir, "--pipeline", "val", "--size", 64, "--batch", 8,
                             "--device", -1, "--json").stdout)
    for key in ("memory_budget", "shuffle_reason", "threads", "threads_reason"):
        assert cli[key] == python[key], key
    # the same rule, up to this rank's share of MemAvailable, which moves between the two runs
    assert cli["memory_budget_reason"].split("'s ")[0] == python["memory_budget_reason"].split("'s ")[0]


def test_threads_are_this_ranks_share_and_num_workers_caps_them(val_dir, monkeypatch):
    import os
    cpus = len(os.sched_getaffinity(0))
    s = ringfeed.Loader(val_dir, batch_size=4).stats()
    assert s["threads"] <= cpus and s["threads_reason"].startswith(f"{cpus} CPUs in the affinity mask")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(2 * cpus))  # more local ranks than CPUs: one thread each
    shared = ringfeed.Loader(val_dir, batch_size=4).stats()
    assert shared["threads"] == 1
    assert f"shared by {2 * cpus} local ranks (LOCAL_WORLD_SIZE)" in shared["threads_reason"]
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    loader = ringfeed.DataLoader(val_dir, batch_size=4, num_workers=1)
    s = loader.stats()
    assert s["threads"] == 1 and s["threads_reason"].startswith("num_workers=1 (this rank's share: ")
    assert ringfeed.Loader(val_dir, batch_size=4, threads=2).stats().get("threads_reason") is None
