"""ringfeed.DataLoader: torch's DataLoader signature over the C++ pipeline.

The reference is torch's own DataLoader on the same dataset: with a
deterministic transform, every batch must hold the same samples in the same
order (labels identical, pixels within 1e-6 in exact mode), for each way
torch orders an epoch (sequential, shuffled by a generator or by the global
RNG, a sampler, a batch sampler, a Subset)."""
import warnings

import pytest

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("torchvision.datasets")
T = pytest.importorskip("torchvision.transforms")

import ringfeed  # noqa: E402
from torch.utils.data import (BatchSampler, DistributedSampler, RandomSampler, Subset,  # noqa: E402
                              WeightedRandomSampler)

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def val_transform():
    return T.Compose([T.Resize(40), T.CenterCrop(32), T.ToTensor(), T.Normalize(MEAN, STD)])


@pytest.fixture(scope="module")
def folder(train_dir):
    return datasets.ImageFolder(train_dir, transform=val_transform())


def batches(loader):
    return [(images.clone(), labels.clone()) for images, labels in loader]


def assert_like_torch(got, want, what):
    assert len(got) == len(want), f"{what}: {len(got)} batches, torch made {len(want)}"
    for k, ((gi, gl), (wi, wl)) in enumerate(zip(got, want)):
        assert torch.equal(gl, wl), f"{what}: batch {k} labels {gl.tolist()}, torch's {wl.tolist()}"
        assert gi.shape == wi.shape and gi.dtype == wi.dtype, f"{what}: batch {k} {gi.shape} vs {wi.shape}"
        diff = (gi - wi).abs().max().item()
        assert diff <= 1e-6, f"{what}: batch {k} pixels differ from torch's by {diff}"


def native(dataset, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning may come
        loader = ringfeed.DataLoader(dataset, exact=True, **kwargs)
    assert loader.backend == "ringfeed" and loader.fallback_reason is None
    return loader


@pytest.mark.parametrize("shuffle", [False, True])
def test_same_batches_as_torch_with_a_generator(folder, shuffle):
    ours = native(folder, batch_size=16, shuffle=shuffle, generator=torch.Generator().manual_seed(7),
                  num_workers=2, pin_memory=True)
    theirs = torch.utils.data.DataLoader(folder, batch_size=16, shuffle=shuffle,
                                         generator=torch.Generator().manual_seed(7))
    assert len(ours) == len(theirs) == 13
    for epoch in range(2):  # the generator moves on: the second epoch is another order, still torch's
        assert_like_torch(batches(ours), batches(theirs), f"shuffle={shuffle} epoch {epoch}")


@pytest.mark.parametrize("workers, batch_size, drop_last, steps", [
    (0, 16, False, 3),    # torch's generator: one permutation, not the sampler's last
    (0, 20, False, 10),   # every batch taken, the end not asked for: no last permutation
    (0, 16, True, 12),
    (2, 16, False, 3),    # workers ask 4 batches ahead: still short of the end
    (2, 16, False, 9),    # 9 + 4 asked: the sampler ran dry, its last permutation drawn
])
def test_a_break_leaves_the_generator_where_torchs_iterator_does(folder, workers, batch_size, drop_last, steps):
    # RandomSampler draws a last permutation once it is used up, which
    # torch's iterator reaches only at the end; ringfeed drew it up front,
    # so after a break every later epoch's order differed from torch's.
    def first_batches(make):
        g = torch.Generator().manual_seed(0)
        loader = make(folder, batch_size=batch_size, shuffle=True, generator=g, num_workers=workers,
                      drop_last=drop_last)
        labels = []
        for epoch in range(3):
            for k, (_, y) in enumerate(loader):
                labels.append((epoch, k, y.tolist()))
                if epoch == 0 and k + 1 == steps:
                    break
        return labels, g.get_state()
    want, want_state = first_batches(torch.utils.data.DataLoader)
    got, got_state = first_batches(lambda *a, **k: native(*a, **k))
    assert got == want
    assert torch.equal(got_state, want_state)


def test_the_tuning_guide_snippet_with_only_the_import_changed(train_dir):
    def snippet(DataLoader):
        torch.manual_seed(0)
        train_dataset = datasets.ImageFolder(train_dir, transform=val_transform())
        train_loader = DataLoader(train_dataset, batch_size=256, shuffle=True, num_workers=8,
                                  pin_memory=True, prefetch_factor=4, persistent_workers=True)
        return train_loader, [(i.clone(), l.clone()) for i, l in train_loader]
    theirs, want = snippet(torch.utils.data.DataLoader)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours, got = snippet(lambda *a, **k: ringfeed.DataLoader(*a, exact=True, **k))
    assert ours.backend == "ringfeed"
    assert (ours.num_workers, ours.prefetch_factor, ours.persistent_workers, ours.pin_memory) == (8, 4, True, True)
    assert_like_torch(got, want, "the snippet")


def test_persistent_workers_draw_like_torchs_persistent_iterator(folder):
    """torch makes a persistent iterator once (one base-seed draw) and
    resets it each epoch: the generator's later permutations follow."""
    kw = dict(batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
    ours = native(folder, generator=torch.Generator().manual_seed(11), **kw)
    theirs = torch.utils.data.DataLoader(folder, generator=torch.Generator().manual_seed(11), **kw)
    for epoch in range(3):
        assert_like_torch(batches(ours), batches(theirs), f"persistent workers, epoch {epoch}")


def test_an_iterator_ended_by_a_later_one_says_so(folder):
    loader = native(folder, batch_size=50)
    first = iter(loader)
    next(first)
    second = iter(loader)
    assert len(list(second)) == 4
    with pytest.raises(RuntimeError, match="ended by a later iter"):
        next(first)


def test_shuffle_follows_the_global_seed(folder):
    torch.manual_seed(1234)
    want = batches(torch.utils.data.DataLoader(folder, batch_size=32, shuffle=True, drop_last=True))
    torch.manual_seed(1234)
    got = batches(native(folder, batch_size=32, shuffle=True, drop_last=True))
    assert len(got) == 200 // 32
    assert_like_torch(got, want, "global RNG")


@pytest.mark.parametrize("rank", [0, 1])
def test_distributed_sampler_each_rank_each_epoch(folder, rank):
    ours_sampler = DistributedSampler(folder, num_replicas=2, rank=rank, shuffle=True, seed=5)
    theirs_sampler = DistributedSampler(folder, num_replicas=2, rank=rank, shuffle=True, seed=5)
    ours = native(folder, batch_size=24, sampler=ours_sampler)
    theirs = torch.utils.data.DataLoader(folder, batch_size=24, sampler=theirs_sampler)
    for epoch in range(2):
        ours_sampler.set_epoch(epoch)
        theirs_sampler.set_epoch(epoch)
        assert_like_torch(batches(ours), batches(theirs), f"rank {rank} epoch {epoch}")


def test_subset_with_a_weighted_sampler(folder):
    subset = Subset(folder, list(range(10, 150, 3)))
    weights = [1.0 + (i % 4) for i in range(len(subset))]
    ours = native(subset, batch_size=10, sampler=WeightedRandomSampler(weights, 60, replacement=True,
                                                                        generator=torch.Generator().manual_seed(3)))
    theirs = torch.utils.data.DataLoader(subset, batch_size=10, sampler=WeightedRandomSampler(
        weights, 60, replacement=True, generator=torch.Generator().manual_seed(3)))
    assert_like_torch(batches(ours), batches(theirs), "Subset + WeightedRandomSampler")


def test_a_subset_of_a_subset(folder):
    inner = Subset(folder, list(range(199, -1, -2)))
    outer = Subset(inner, [5, 0, 99, 42, 7])
    assert_like_torch(batches(native(outer, batch_size=2)),
                      batches(torch.utils.data.DataLoader(outer, batch_size=2)), "nested Subset")


def test_new_subset_indices_between_epochs_are_used(folder):
    """A script that swaps a Subset's indices (same length) between epochs
    gets the new samples, as from torch's loader."""
    subset = Subset(folder, list(range(0, 40)))
    loader = native(subset, batch_size=40)
    first = next(iter(loader))[1].tolist()
    subset.indices = list(range(160, 200))
    again = next(iter(loader))[1].tolist()
    assert again == next(iter(torch.utils.data.DataLoader(subset, batch_size=40)))[1].tolist() != first


def test_batch_sampler_and_drop_last(folder):
    def make(cls):
        sampler = BatchSampler(RandomSampler(folder, generator=torch.Generator().manual_seed(9)), 48, drop_last=True)
        return cls(folder, batch_sampler=sampler)
    ours, theirs = make(native), make(torch.utils.data.DataLoader)
    assert len(ours) == len(theirs) == 4
    assert ours.batch_size is None and ours.drop_last is False  # as torch reports them with batch_sampler=
    assert_like_torch(batches(ours), batches(theirs), "batch_sampler")


def test_torch_attributes(folder):
    loader = native(folder, batch_size=64, drop_last=True)
    assert loader.dataset is folder
    assert (loader.batch_size, loader.drop_last, len(loader)) == (64, True, 3)
    assert isinstance(loader.sampler, torch.utils.data.SequentialSampler)
    assert isinstance(loader.batch_sampler, BatchSampler)
    images, labels = next(iter(loader))
    assert images.shape == (64, 3, 32, 32) and images.dtype == torch.float32
    assert labels.dtype == torch.int64 and labels.shape == (64,)


def test_resume_mid_epoch(folder):
    def make():
        return native(folder, batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(2))
    first = make()
    it = iter(first)
    head = [next(it) for _ in range(5)]
    state = first.state_dict()
    rest = [(i.clone(), l.clone()) for i, l in it]
    assert len(head) + len(rest) == 13

    again = make()
    again.load_state_dict(state)
    assert_like_torch(batches(again), rest, "resumed epoch")


def test_a_state_saved_after_an_iteration_resumes_with_the_next(folder):
    def make():
        return native(folder, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(2))
    first = make()
    batches(first)
    state = first.state_dict()
    want = batches(first)  # the second iteration
    again = make()
    again.load_state_dict(state)
    got = batches(again)
    assert len(got) == len(want) == 4  # not an empty iteration
    assert_like_torch(got, want, "the iteration after the state")
    assert again.state_dict()["iteration"] == first.state_dict()["iteration"] == 2


@pytest.mark.parametrize("persistent", [False, True])
def test_a_resumed_loader_draws_the_later_epochs_as_the_first(folder, persistent):
    # The restarted script seeds its generator as before: without the
    # generator's state in the state_dict, every later epoch replayed epoch
    # 0's order; with persistent workers the resumed loader drew another base seed.
    import json

    def make():
        kw = dict(num_workers=2, persistent_workers=True) if persistent else {}
        return native(folder, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(5), **kw)
    straight = make()
    want = [[l.tolist() for _, l in straight] for _ in range(3)]
    first = make()
    it = iter(first)
    head = [next(it)[1].tolist() for _ in range(3)]
    state = json.loads(json.dumps(first.state_dict()))
    again = make()
    again.load_state_dict(state)
    got = [head + [l.tolist() for _, l in again]] + [[l.tolist() for _, l in again] for _ in range(2)]
    assert got == want
    state["generator"] = "not base64!"
    with pytest.raises(ValueError, match="generator"):
        make().load_state_dict(state)


def test_a_new_transform_between_epochs_is_used(train_dir):
    """Progressive resizing sets dataset.transform between epochs; torch's
    loader sees it at the next iteration, and so does ringfeed's."""
    dataset = datasets.ImageFolder(train_dir, transform=val_transform())
    loader = native(dataset, batch_size=100)
    assert next(iter(loader))[0].shape == (100, 3, 32, 32)
    dataset.transform = T.Compose([T.Resize(20), T.CenterCrop(16), T.ToTensor()])
    images, _ = next(iter(loader))
    want, _ = next(iter(torch.utils.data.DataLoader(dataset, batch_size=100)))
    assert images.shape == (100, 3, 16, 16) and (images - want).abs().max().item() <= 1e-6
    dataset.transform = T.Compose([T.Lambda(lambda x: x), T.ToTensor()])
    with pytest.raises(RuntimeError, match="the dataset changed.*Lambda"):
        iter(loader)


def test_samples_and_subset_indices_edited_in_place_are_used(train_dir):
    """Relabelling in place between epochs (same list, same length): torch's
    loader reads the new labels at the next iteration; ringfeed served the
    old ones, its fingerprint being the lists' identity and length."""
    dataset = datasets.ImageFolder(train_dir, transform=val_transform())
    subset = Subset(dataset, list(range(8)))
    loaders = (native(dataset, batch_size=4), native(subset, batch_size=4))
    assert [next(iter(l))[1].tolist() for l in loaders] == [[0, 0, 0, 0]] * 2
    for i in range(4):
        dataset.samples[i] = (dataset.samples[i][0], 2)
    subset.indices[0] = len(dataset) - 1
    want = [next(iter(torch.utils.data.DataLoader(d, batch_size=4)))[1].tolist() for d in (dataset, subset)]
    assert want == [[2, 2, 2, 2], [dataset.samples[-1][1], 2, 2, 2]]
    assert [next(iter(l))[1].tolist() for l in loaders] == want


def test_timeout_raises_as_torch_does(big_dataset):
    slow = datasets.ImageFolder(big_dataset, transform=T.Compose([T.Resize(64), T.CenterCrop(64), T.ToTensor()]))
    loader = native(slow, batch_size=8, timeout=0.01, threads=1)  # 8 exact 3000x2000 decodes on one thread
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0\.01 seconds$"):
        next(iter(loader))
    loader.close()


# --- what falls back to torch's DataLoader --------------------------------------------------------

class OwnDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.zeros(3, 2, 2), i


class OwnFolder(torch.utils.data.Dataset):
    """A samples list, torchvision's loader and a transform, as
    DatasetFolder has, and a __getitem__ that returns something else: it
    ran natively, its labels and third field silently lost."""

    def __init__(self, folder):
        self.samples, self.transform = folder.samples, folder.transform
        self.loader = datasets.folder.default_loader

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, target = self.samples[i]
        return self.transform(self.loader(path)), target + 100, i


class PairSubset(Subset):
    def __getitem__(self, i):
        image, label = super().__getitem__(i)
        return image, label, i

    def __getitems__(self, indices):  # torch >= 2.5 refuses a Subset subclass without it
        return [self[i] for i in indices]


class BatchFetchFolder(datasets.ImageFolder):
    """Torch >= 2.0's fetcher calls __getitems__ for a whole batch; torch
    1.13's never does, and ringfeed must not bypass it either way."""

    def __getitems__(self, indices):
        return [(self[i][0] * 0, i) for i in indices]


class Endless(torch.utils.data.Sampler):
    def __init__(self):
        pass

    def __iter__(self):
        while True:
            yield 0


def reasons(folder, train_dir):
    yield "own __getitem__", OwnDataset(), {}, "has its own __getitem__"
    yield "own __getitem__ and samples", OwnFolder(folder), {}, "has its own __getitem__ (not torchvision's"
    yield "Subset subclass", PairSubset(folder, [0, 1]), {}, "has its own __getitem"
    yield "own __getitems__", BatchFetchFolder(train_dir, transform=val_transform()), {}, "own __getitems__"
    yield "endless sampler", folder, {"sampler": Endless()}, "has no len()"
    yield "Lambda", datasets.ImageFolder(train_dir, transform=T.Compose([T.Lambda(lambda x: x), T.ToTensor()])), \
        {}, "Lambda"
    yield "target_transform", datasets.ImageFolder(train_dir, transform=val_transform(),
                                                   target_transform=lambda y: y), {}, "target_transform"
    yield "collate_fn", folder, {"collate_fn": lambda b: b}, "collate_fn"
    yield "worker_init_fn", folder, {"worker_init_fn": lambda w: None, "num_workers": 1}, "worker_init_fn"
    yield "no batching", folder, {"batch_size": None}, "batch_size=None"
    yield "PIL images", datasets.ImageFolder(train_dir), {}, "no transform"
    yield "own loader", datasets.ImageFolder(train_dir, transform=val_transform(), loader=lambda p: p), {}, \
        "own loader function"


def test_every_fallback_warns_names_its_reason_and_is_torchs(folder, train_dir):
    for what, dataset, kwargs, words in reasons(folder, train_dir):
        with pytest.warns(UserWarning, match="using torch's DataLoader") as record:
            loader = ringfeed.DataLoader(dataset, **kwargs)
        assert len(record) == 1, what
        assert type(loader) is torch.utils.data.DataLoader, what
        assert loader.backend == "torch" and words in loader.fallback_reason, (what, loader.fallback_reason)
        with pytest.raises(ValueError, match="cannot run this natively") as e:
            ringfeed.DataLoader(dataset, strict=True, **kwargs)
        assert words in str(e.value), what


def test_the_fallback_loads_what_torch_loads():
    loader = ringfeed.DataLoader(OwnDataset(), batch_size=2, shuffle=False)
    assert loader.backend == "torch"
    labels = [l.tolist() for _, l in loader]
    assert labels == [[0, 1], [2, 3]]


# --- arguments --------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"batch_size": 0},
    {"shuffle": True, "sampler": [0, 1]},
    {"batch_sampler": [[0, 1]], "batch_size": 4},
    {"timeout": -1},
    {"num_workers": -1},
    {"persistent_workers": True},
])
def test_bad_arguments_raise_what_torch_raises(folder, kwargs):
    with pytest.raises(Exception) as theirs:
        torch.utils.data.DataLoader(folder, **kwargs)
    with pytest.raises(type(theirs.value)) as ours:
        ringfeed.DataLoader(folder, **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_a_path_gets_torchs_argument_checks(train_dir):
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DataLoader(range(3), batch_size=0)
    with pytest.raises(ValueError) as ours:
        ringfeed.DataLoader(train_dir, batch_size=0)
    assert str(ours.value) == str(theirs.value)


def test_a_corrupt_file_raises_as_in_torchs_loader_unless_skipped(train_dir, tmp_path):
    # It was left out with one log line: torch's loader raises, so the
    # drop-in did otherwise, and offered no way to fail.
    import shutil
    root = tmp_path / "train"
    shutil.copytree(train_dir, root)
    bad = sorted((root / sorted(p.name for p in root.iterdir())[0]).iterdir())[1]
    bad.write_bytes(b"not an image")
    dataset = datasets.ImageFolder(str(root), transform=val_transform())
    with pytest.raises(Exception):
        list(torch.utils.data.DataLoader(dataset, batch_size=4))
    loader = native(dataset, batch_size=4)
    with pytest.raises(RuntimeError, match=bad.name):
        list(loader)
    skipping = native(dataset, batch_size=4, on_error="skip")
    assert sum(len(labels) for _, labels in skipping) == len(dataset) - 1
    assert [s["path"] for s in skipping.stats()["skipped"]] == [str(bad)]
    with pytest.raises(ValueError, match="on_error"):
        ringfeed.DataLoader(dataset, on_error="ignore")


@pytest.mark.parametrize("kwargs, words", [
    ({"strict": 1}, "strict must be True or False"),
    ({"exact": "yes"}, "exact must be True or False"),
    ({"threads": -2}, "threads must be an int >= 0"),
    ({"memory_budget": 0}, "memory_budget must be an int >= 1"),
    ({"seed": -1}, "seed must be an int >= 0"),
])
def test_ringfeeds_own_arguments_are_checked(folder, kwargs, words):
    with pytest.raises(ValueError, match=words):
        ringfeed.DataLoader(folder, **kwargs)


def test_a_path_is_read_by_ringfeed(train_dir):
    loader = ringfeed.DataLoader(train_dir, batch_size=50, shuffle=True, generator=torch.Generator().manual_seed(4))
    assert loader.backend == "ringfeed" and len(loader) == 4
    got = [l.tolist() for _, l in loader]
    # torch's order of the same 200 indices, and the labels ImageFolder gives them
    order = torch.utils.data.DataLoader(range(200), batch_size=50, shuffle=True,
                                        generator=torch.Generator().manual_seed(4))
    targets = datasets.ImageFolder(train_dir).targets
    assert got == [[targets[i] for i in batch.tolist()] for batch in order]


def test_torchrun_distributed_sampler(dataset150, tmp_path):
    """A real `torch.distributed.run --nproc_per_node=2` job: each rank's
    batches are torch's, and the ranks are disjoint and cover the data."""
    import json
    import socket
    import subprocess
    import sys
    from conftest import HERE, child_env
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = tmp_path / "result.json"
    # --redirects/--tee 2: torch 1.13's torchrun crashes on Python 3.11 with the default 0.
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc_per_node=2", "--redirects=2",
           "--tee=2", f"--log_dir={tmp_path / 'logs'}", "--master_addr=127.0.0.1", f"--master_port={port}",
           str(HERE / "dataloader_dist_worker.py"), str(dataset150 / "train"), str(result)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=tmp_path,
                          env=child_env(OMP_NUM_THREADS=1))
    assert proc.returncode == 0, f"torchrun exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    report = json.loads(result.read_text())
    assert report["ok"], report["problems"]
    assert report["world_size"] == 2 and report["per_rank_samples"] == [75, 75]


def test_the_training_example_runs_with_the_import_swapped(train_dir):
    """apps/examples/torch_train_dataloader.py --ringfeed: a training loop
    whose only change is `from ringfeed import DataLoader`."""
    import subprocess
    import sys
    from conftest import REPO, child_env
    proc = subprocess.run([sys.executable, str(REPO / "apps" / "examples" / "torch_train_dataloader.py"), train_dir,
                           "--steps", "6", "--log-every", "3", "--batch", "16", "--ringfeed"],
                          capture_output=True, text=True, timeout=300, env=child_env())
    assert proc.returncode == 0, proc.stderr
    assert "ringfeed.DataLoader(200 images" in proc.stdout and "6 steps" in proc.stdout, proc.stdout


def _v2():
    v2 = pytest.importorskip("torchvision.transforms.v2")
    if not hasattr(v2, "ToImage"):
        pytest.skip("torchvision.transforms.v2 before 0.16 (no ToImage): test_transforms_v2's goldens cover it")
    return v2


@pytest.mark.parametrize("recipe", ["v2_val", "nested_lists"])
def test_torch2_scripts_run_natively_with_torchs_batches(train_dir, recipe):
    # issue 42: the val transform people write with transforms.v2, and lists
    # built from lists, run in ringfeed (strict: no fallback) batch for batch
    # as torch's DataLoader gives them
    if recipe == "v2_val":
        v2 = _v2()
        transform = v2.Compose([v2.Resize(40), v2.CenterCrop(32), v2.PILToTensor(),
                                v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
    else:
        transform = T.Compose([T.Compose([T.Resize(40), T.Compose([T.CenterCrop(32)])]), T.ToTensor(),
                               T.Normalize(MEAN, STD)])
    dataset = datasets.ImageFolder(train_dir, transform=transform)
    ours = native(dataset, batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(3), strict=True)
    theirs = torch.utils.data.DataLoader(dataset, batch_size=16, shuffle=True,
                                         generator=torch.Generator().manual_seed(3))
    assert_like_torch(batches(ours), batches(theirs), recipe)
