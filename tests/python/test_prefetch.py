"""Adaptive prefetch (issue 39) from Python: stats()["prefetch"] shows the
depth the loader keeps ahead, which grows while the consumer waits for
batches and shrinks while finished batches wait for the consumer, within
prefetch_batches. The rule and the C++ loader are tested in
tests/prefetch_control_tests.cpp and tests/loader_prefetch_tests.cpp."""
import json
import time

import ringfeed
from conftest import run_cli

KEYS = {"depth", "low", "high", "floor", "cap", "ready", "slabs", "consumer_waits", "spare_deliveries",
        "changes", "history"}


def wait_until(loader, done, limit=60.0):
    """Polls stats() until done(prefetch) holds: a state the loader reaches
    by itself, with a deadline; never a sleep standing in for it."""
    deadline = time.monotonic() + limit
    while not done(loader.stats()["prefetch"]):
        assert time.monotonic() < deadline, loader.stats()["prefetch"]
        time.sleep(0)  # let the loader's threads run


def test_stats_show_the_prefetch_depth_before_anything_runs(val_dir):
    s = ringfeed.Loader(val_dir, batch_size=4, pipeline="val", size=32, prefetch_batches=3).stats()
    p = s["prefetch"]
    assert set(p) == KEYS
    assert (p["depth"], p["floor"], p["cap"], p["low"], p["high"]) == (2, 1, 3, 2, 2)
    assert s["prefetch_batches"] == 3  # the cap: what the caller allowed
    assert p["history"] == [[0, 2]]
    assert p["consumer_waits"] == 0 and p["changes"] == 0


def test_a_fast_then_slow_consumer_moves_the_depth_up_then_down(train_dir):
    loader = ringfeed.Loader(train_dir, batch_size=4, pipeline="val", size=32, shuffle=False,
                             prefetch_batches=4)
    batches = len(loader)  # 50
    it = iter(loader)
    labels = []
    # fast: take each batch as soon as it comes, drop it at once
    while len(labels) < batches // 2 and loader.stats()["prefetch"]["depth"] < 4:
        images, y = next(it)
        labels.extend(y.tolist())
        del images, y
    fast = loader.stats()["prefetch"]
    assert fast["depth"] == fast["high"] == 4, fast
    assert fast["consumer_waits"] >= 2
    turned = len(labels) // 4
    # slow: two batches finished before each one is taken (this one's memory given back first)
    for _ in range(turned, batches):
        wait_until(loader, lambda p: p["ready"] >= 2)
        images, y = next(it)
        labels.extend(y.tolist())
        del images, y
    assert next(it, None) is None
    assert len(labels) == 200 and labels == sorted(labels)  # ImageFolder order: every sample once
    end = loader.stats()["prefetch"]
    assert (end["depth"], end["low"], end["high"]) == (1, 1, 4), end
    depths = [d for _, d in end["history"]]
    peak = max(i for i, d in enumerate(depths) if d == 4)
    assert depths[peak:] == [4, 3, 2, 1]
    assert all(b >= turned for b, _ in end["history"][peak + 1:])
    loader.close()


def test_the_cli_reports_prefetch_too(val_dir):
    out = json.loads(run_cli("bench", val_dir, "--pipeline", "val", "--size", 32, "--batch", 4,
                             "--device", -1, "--json").stdout)
    p = out["prefetch"]
    assert set(p) == KEYS
    assert p["floor"] <= p["low"] <= p["depth"] <= p["high"] <= p["cap"] == out["prefetch_batches"]
    assert all(len(h) == 2 for h in p["history"])
