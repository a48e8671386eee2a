"""ringfeed.DataLoader over datasets that hold their images in memory
(CIFAR-10/100, the MNIST family): read in place from the dataset's array,
each image entering the transforms as the PIL image torchvision makes of it
(RGB for CIFAR, L for MNIST). The datasets are written by the test in their
real on-disk formats (pickled batches, idx files) and loaded by torchvision."""
import os
import pickle
import struct
import warnings

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
torchvision = pytest.importorskip("torchvision")
from torchvision import datasets  # noqa: E402
from torchvision import transforms as T  # noqa: E402

import ringfeed  # noqa: E402


def write_cifar(root, hundred=False, n_train=150, n_test=30, seed=0):
    rng = np.random.default_rng(seed)
    folder = os.path.join(root, "cifar-100-python" if hundred else "cifar-10-batches-py")
    os.makedirs(folder, exist_ok=True)
    key, classes = ("fine_labels", 100) if hundred else ("labels", 10)
    splits = (["train"], ["test"]) if hundred else ([f"data_batch_{i}" for i in range(1, 6)], ["test_batch"])
    for files, n in ((splits[0], n_train), (splits[1], n_test)):
        for name in files:
            per = n // len(files)
            batch = {"data": rng.integers(0, 256, (per, 3072), dtype=np.uint8),
                     key: [int(c) for c in rng.integers(0, classes, per)]}
            with open(os.path.join(folder, name), "wb") as f:
                pickle.dump(batch, f)
    meta_name, meta_key = ("meta", "fine_label_names") if hundred else ("batches.meta", "label_names")
    with open(os.path.join(folder, meta_name), "wb") as f:
        pickle.dump({meta_key: [f"class{i}" for i in range(classes)]}, f)


def write_mnist(root, cls, n_train=120, n_test=20, seed=1):
    rng = np.random.default_rng(seed)
    raw = os.path.join(root, cls, "raw")
    os.makedirs(raw, exist_ok=True)
    for split, n in (("train", n_train), ("t10k", n_test)):
        with open(os.path.join(raw, f"{split}-images-idx3-ubyte"), "wb") as f:
            f.write(struct.pack(">IIII", 2051, n, 28, 28) + rng.integers(0, 256, n * 784, dtype=np.uint8).tobytes())
        with open(os.path.join(raw, f"{split}-labels-idx1-ubyte"), "wb") as f:
            f.write(struct.pack(">II", 2049, n) + rng.integers(0, 10, n, dtype=np.uint8).tobytes())


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    root = tmp_path_factory.mktemp("in_memory")
    write_cifar(str(root / "c10"))
    write_cifar(str(root / "c100"), hundred=True)
    for cls in ("MNIST", "FashionMNIST", "KMNIST"):
        write_mnist(str(root / "mnist"), cls)
    return root


@pytest.fixture(autouse=True)
def _cifar_files_are_ours(monkeypatch):
    # torchvision checks CIFAR's files against the published MD5s; these are
    # written by the test in the same format.
    monkeypatch.setattr(datasets.CIFAR10, "_check_integrity", lambda self: True)
    monkeypatch.setattr(torchvision.datasets.cifar, "check_integrity", lambda *a, **k: True)


CIFAR_NORM = T.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))
MNIST_NORM = T.Normalize((0.1307,), (0.3081,))


def make(kind, roots, transform):
    if kind in ("CIFAR10", "CIFAR100"):
        return getattr(datasets, kind)(str(roots / ("c10" if kind == "CIFAR10" else "c100")), train=True,
                                       transform=transform)
    return getattr(datasets, kind)(str(roots / "mnist"), train=True, transform=transform)


def native(dataset, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loader = ringfeed.DataLoader(dataset, **kwargs)
    assert loader.backend == "ringfeed", loader.fallback_reason
    return loader


def assert_like_torch(ours, theirs, what):
    got, want = list(ours), list(theirs)
    assert len(got) == len(want), what
    for k, ((gi, gl), (wi, wl)) in enumerate(zip(got, want)):
        assert torch.equal(gl, wl), f"{what}: batch {k} labels"
        assert gi.shape == wi.shape and gi.dtype == wi.dtype, f"{what}: batch {k} {gi.shape} vs {wi.shape}"
        assert (gi.double() - wi.double()).abs().max().item() <= 1e-6, f"{what}: batch {k} pixels"


@pytest.mark.parametrize("kind, transform", [
    ("CIFAR10", T.Compose([T.ToTensor(), CIFAR_NORM])),
    ("CIFAR100", T.Compose([T.Pad(4, padding_mode="reflect"), T.CenterCrop(36), T.ToTensor(), CIFAR_NORM])),
    ("MNIST", T.Compose([T.ToTensor(), MNIST_NORM])),
    ("FashionMNIST", T.Compose([T.Pad(2), T.Resize(16), T.PILToTensor()])),
    ("KMNIST", T.ToTensor()),
])
def test_deterministic_recipes_equal_torch(roots, kind, transform):
    dataset = make(kind, roots, transform)
    ours = native(dataset, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(8))
    theirs = torch.utils.data.DataLoader(dataset, batch_size=32, shuffle=True,
                                         generator=torch.Generator().manual_seed(8))
    for epoch in range(2):
        assert_like_torch(ours, theirs, f"{kind} epoch {epoch}")


@pytest.mark.parametrize("kind, transform, shape", [
    ("CIFAR10", T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(), CIFAR_NORM]),
     (3, 32, 32)),
    ("MNIST", T.Compose([T.RandomCrop(28, padding=2), T.ToTensor(), MNIST_NORM]), (1, 28, 28)),
])
def test_the_tuning_guides_train_recipes(roots, kind, transform, shape):
    """Random augmentation is ringfeed's own: the samples and their order
    are torch's, each image's pixels one of the crops torch could draw."""
    dataset = make(kind, roots, transform)
    ours = native(dataset, batch_size=50, shuffle=True, drop_last=True, generator=torch.Generator().manual_seed(3))
    order = torch.utils.data.DataLoader(range(len(dataset)), batch_size=50, shuffle=True, drop_last=True,
                                        generator=torch.Generator().manual_seed(3))
    pad = 4 if kind == "CIFAR10" else 2
    plain = make(kind, roots, T.Compose([T.Pad(pad), T.ToTensor(), transform.transforms[-1]]))
    targets = [int(t) for t in dataset.targets]
    for (images, labels), indices in zip(ours, order):
        assert images.shape == (50, *shape) and images.dtype == torch.float32
        assert labels.tolist() == [targets[i] for i in indices.tolist()]
        for k in (0, 17, 49):  # each output is a crop of the padded (maybe flipped) image
            padded = plain[int(indices[k])][0]
            crops = [padded[:, y:y + shape[1], x:x + shape[2]] for y in range(2 * pad + 1) for x in range(2 * pad + 1)]
            if kind == "CIFAR10":
                crops += [c.flip(-1) for c in crops]
            assert any((c - images[k]).abs().max().item() <= 1e-6 for c in crops), f"{kind} sample {k}"


def test_a_subset_reads_the_whole_array_in_place(roots):
    dataset = make("CIFAR10", roots, T.Compose([T.ToTensor()]))
    subset = torch.utils.data.Subset(dataset, list(range(149, 0, -7)))
    assert_like_torch(native(subset, batch_size=8), torch.utils.data.DataLoader(subset, batch_size=8), "Subset")


def test_new_images_between_epochs_are_read_as_torch_reads_them(roots):
    """The array is read in place; a script that replaces it between epochs
    gets the new images at the next iteration, as from torch's loader."""
    dataset = make("MNIST", roots, T.ToTensor())
    loader = native(dataset, batch_size=40)
    before = [i.clone() for i, _ in loader]
    dataset.data = 255 - dataset.data
    after = [i.clone() for i, _ in loader]
    want = [i for i, _ in torch.utils.data.DataLoader(dataset, batch_size=40)]
    assert all(torch.equal(a, w) for a, w in zip(after, want)) and len(after) == len(want) == 3
    assert all(torch.allclose(a, 1 - b) for a, b in zip(after, before))


def test_a_color_op_on_grayscale_images_falls_back(roots):
    dataset = make("MNIST", roots, T.Compose([T.ColorJitter(brightness=0.5), T.ToTensor()]))
    with pytest.warns(UserWarning, match=r"L \(grayscale\) images.*ColorJitter"):
        loader = ringfeed.DataLoader(dataset, batch_size=10)
    assert loader.backend == "torch"
