"""Shared fixtures for the ringfeed Python binding tests.

Run (as ctest does):
    PYTHONPATH=build/default/python RINGFEED_CLI=build/default/bin/ringfeed \
        /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python

Datasets are generated once per session with `ringfeed gen` (byte-identical
for a given seed) into pytest's temporary directory.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent

# The dataset indexes the tests make go to a scratch folder, not the
# developer's ~/.cache/ringfeed (ctest sets the same for every test).
os.environ.setdefault("RINGFEED_CACHE_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "ringfeed-test-index-cache"))

# ImageNet normalization, as the loader documents it.
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def cli_path() -> str:
    cli = os.environ.get("RINGFEED_CLI")
    if not cli:
        cli = str(REPO / "build" / "default" / "bin" / "ringfeed")
    return cli


def run_cli(*args, timeout=120) -> subprocess.CompletedProcess:
    cli = cli_path()
    if not os.access(cli, os.X_OK):
        pytest.fail(f"ringfeed CLI not found at {cli!r}: set RINGFEED_CLI")
    proc = subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(f"`ringfeed {' '.join(map(str, args))}` failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def gen_dataset(root: pathlib.Path, images: int, classes: int, seed: int) -> pathlib.Path:
    run_cli("gen", root, "--images", images, "--classes", classes, "--seed", seed)
    assert (root / "train").is_dir() and (root / "val").is_dir(), f"gen wrote no ImageFolder under {root}"
    return root


def child_env(**extra) -> dict:
    """Environment for child Python processes: the same PYTHONPATH (the
    build's module), no distributed settings leaking in from outside."""
    env = dict(os.environ)
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS",
                "MASTER_ADDR", "MASTER_PORT"):
        env.pop(var, None)
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


@pytest.fixture(autouse=True)
def _no_distributed_env(monkeypatch):
    # Rank/world size default from RANK/WORLD_SIZE (or SLURM_*): keep a CI
    # environment's values from changing what every test sees.
    for var in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="session")
def python_exe() -> str:
    return sys.executable


@pytest.fixture(scope="session")
def dataset(tmp_path_factory) -> pathlib.Path:
    """200 train images (not divisible by 3) and 20 val images in 4 classes."""
    return gen_dataset(tmp_path_factory.mktemp("ds200") / "data", images=200, classes=4, seed=11)


@pytest.fixture(scope="session")
def train_dir(dataset) -> str:
    return str(dataset / "train")


@pytest.fixture(scope="session")
def val_dir(dataset) -> str:
    return str(dataset / "val")


@pytest.fixture(scope="session")
def dataset150(tmp_path_factory) -> pathlib.Path:
    """150 train images (divisible by 2 and 3) in 3 classes."""
    return gen_dataset(tmp_path_factory.mktemp("ds150") / "data", images=150, classes=3, seed=23)


@pytest.fixture(scope="session")
def corrupt_copy(tmp_path_factory, dataset):
    """Factory: a copy of the val ImageFolder with the file at sorted
    dataset index `index` replaced by `content`. Returns (root, bad_path)."""
    made = {}

    def make(index: int, content: bytes, tag: str):
        key = (index, content, tag)
        if key in made:
            return made[key]
        root = tmp_path_factory.mktemp(f"corrupt_{tag}") / "val"
        shutil.copytree(dataset / "val", root)
        from torchvision.datasets import ImageFolder  # the reference order
        bad = ImageFolder(str(root)).samples[index][0]
        with open(bad, "wb") as f:
            f.write(content)
        made[key] = (str(root), bad)
        return made[key]

    return make


def sample_digest(t) -> str:
    """Identity of one sample's pixels (any dtype, host tensor)."""
    return hashlib.sha1(t.contiguous().numpy().tobytes()).hexdigest()


def epoch_batches(loader):
    """One epoch as a list of (images, labels) clones."""
    return [(images.clone(), labels.clone()) for images, labels in loader]


def assert_same_batches(got, want, what="batches"):
    import torch
    assert len(got) == len(want), f"{what}: {len(got)} batches, expected {len(want)}"
    for i, ((gi, gl), (wi, wl)) in enumerate(zip(got, want)):
        assert gi.shape == wi.shape and gi.dtype == wi.dtype, f"{what}: batch {i} is {gi.dtype}{tuple(gi.shape)}, expected {wi.dtype}{tuple(wi.shape)}"
        assert torch.equal(gl, wl), f"{what}: batch {i} labels differ: {gl.tolist()} vs {wl.tolist()}"
        assert torch.equal(gi, wi), f"{what}: batch {i} pixels differ (max abs diff {(gi.double() - wi.double()).abs().max().item()})"


@pytest.fixture(scope="session")
def big_dataset(tmp_path_factory, train_dir) -> str:
    """16 large (3000x2000) JPEGs in one class: slow to decode on purpose
    (exact mode, one thread: a batch takes a good part of a second)."""
    import numpy as np
    from PIL import Image
    root = tmp_path_factory.mktemp("big") / "data"
    (root / "c0").mkdir(parents=True)
    sources = sorted(str(p) for p in pathlib.Path(train_dir).glob("*/*"))[:16]
    rng = np.random.default_rng(0)
    for i, src in enumerate(sources):
        im = Image.open(src).convert("RGB").resize((3000, 2000), Image.BILINEAR)
        noisy = np.asarray(im).astype(np.int16) + rng.integers(-12, 13, (2000, 3000, 3), dtype=np.int16)
        Image.fromarray(noisy.clip(0, 255).astype(np.uint8)).save(root / "c0" / f"{i:03d}.jpg", quality=90)
    return str(root)


@pytest.fixture(autouse=True)
def _hang_guard():
    # A deadlock in the loader would otherwise block the run until ctest's
    # timeout: dump every thread's stack and exit instead.
    import faulthandler
    faulthandler.dump_traceback_later(240, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def point_aws_at(monkeypatch, endpoint, server, tmp_path):
    """The AWS tools' configuration for an s3rver (object_store.S3rver) at
    `endpoint` (its own or a proxy's): its credentials and region, nothing
    from outside (no AWS_* variable, profile file or instance metadata)."""
    for var in list(os.environ):
        if var.startswith("AWS_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_REGION", server.region)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", server.access_key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server.secret_access_key)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


# --- object storage (test_object_storage.py, test_object_storage_reads.py) ---------
# The servers of tests/support/object_store.py, one of each for both files
# (session scope: they were module-scoped when the two were one file).

# Servers outlive the tests that use them (the harness stops a server after
# its lifetime, 120 s by default).
OBJECT_STORE_LIFETIME_S = 1800

# io_depth 8: the servers are Python threads in this process (one GIL, 2 cores);
# 64 requests at once (the network default) queued some behind the others
# past the client's 10 s per attempt when the machine was busy.
OBJECT_KW = dict(batch_size=8, pipeline="val", shuffle=False, threads=2, on_error="fail", device="cpu", io_depth=8)


def _object_store():
    sys.path.insert(0, str(REPO / "tests" / "support"))
    return pytest.importorskip("object_store", reason="tests/support/object_store.py (the servers harness)")


def shard_names(shards: pathlib.Path):
    return sorted(p.name for p in shards.glob("*.tar"))


def brace(names) -> str:
    """shard-{000000..00000N}.tar for names shard-000000.tar … shard-00000N.tar."""
    first, last = names[0], names[-1]
    stem = first[: first.rindex("-") + 1]
    return f"{stem}{{{first[len(stem):-4]}..{last[len(stem):-4]}}}.tar"


@pytest.fixture(scope="session")
def shards(tmp_path_factory, train_dir) -> pathlib.Path:
    """train_dir packed into 1 MiB tar shards (WebDataset naming), in order."""
    out = tmp_path_factory.mktemp("shards") / "shards"
    run_cli("pack", train_dir, out, "--shard-mb", "1", "--no-shuffle")
    assert len(list(out.glob("*.tar"))) >= 2, "want several shards"
    return out


@pytest.fixture(scope="session")
def tls_server(tmp_path_factory, shards):
    root = shards.parent
    with _object_store().HttpsServer(root, tmp_path_factory.mktemp("tls"),
                                     lifetime_s=OBJECT_STORE_LIFETIME_S) as server:
        yield server


@pytest.fixture
def trust(monkeypatch, tls_server):
    monkeypatch.setenv("CURL_CA_BUNDLE", tls_server.ca_file)


@pytest.fixture(scope="session")
def s3(tmp_path_factory, train_dir, val_dir, shards):
    store = _object_store()
    try:
        server = store.S3rver(tmp_path_factory.mktemp("s3rver"), buckets=["data"],
                              lifetime_s=OBJECT_STORE_LIFETIME_S).start()
    except store.Unavailable as e:
        pytest.skip(f"s3rver not installed: {e}")
    try:
        server.populate("data", train_dir, prefix="train/")
        server.populate("data", shards, prefix="shards/")
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_env(monkeypatch, s3, tmp_path):
    """The AWS tools' configuration, pointing at s3rver; nothing from outside."""
    point_aws_at(monkeypatch, s3.endpoint, s3, tmp_path)
    return s3


@pytest.fixture
def torch_reference_restored():
    """For tests that set another torch's arithmetic (torch_reference.hpp):
    afterwards, back to the installed torch's, as every other test expects."""
    yield
    import ringfeed.transforms as RT
    RT._followed = None
    RT.follow_installed_torch()
