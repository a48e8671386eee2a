"""torch without a vector unit (get_cpu_capability() DEFAULT) rounds AugMix's
mix, and on tensors the policies and the bilinear affine, otherwise than the
AVX2 / AVX512 kernels ringfeed follows (perf/results/parity_cpu_capability.md:
29 live comparisons differ under ATEN_CPU_CAPABILITY=default). There those
ops are refused by name, so strict=True says why and the DataLoader falls
back to torch's, instead of giving other bytes than torch's.

The capability is pinned by patching what ringfeed reads of torch, not torch
itself: the process's torch keeps its own."""
import pytest
import torch

import ringfeed
import ringfeed.transforms as RT

T = pytest.importorskip("torchvision.transforms")


@pytest.fixture
def capability(monkeypatch):
    """Sets the capability ringfeed's checks see; the C++ reference stays."""
    def use(cpu):
        monkeypatch.setattr(RT, "torch_reference_text", lambda t: f"torch={t.__version__} cpu={cpu}")
        monkeypatch.setattr(RT, "follow_installed_torch", lambda: None)
    return use


def v2():
    return pytest.importorskip("torchvision.transforms.v2", reason="torchvision < 0.15 has no transforms.v2")


def test_augmix_is_refused_without_a_vector_unit_naming_the_fix(capability):
    capability("DEFAULT")
    with pytest.raises(ValueError, match=r"transform 1 \(AugMix\): AugMix mixes in float32, and torch without a "
                                         r"vector unit .*cpu=DEFAULT.*ATEN_CPU_CAPABILITY=avx2"):
        RT.to_spec([T.Resize(64), T.AugMix(), T.PILToTensor()])
    with pytest.raises(ValueError, match=r"transform 0 \(AugMix\)"):
        RT.to_spec([T.AugMix(), T.PILToTensor()])


@pytest.mark.parametrize("cpu", ["AVX2", "AVX512"])
def test_augmix_runs_with_a_vector_unit(capability, cpu):
    capability(cpu)
    assert "AugMix" in RT.to_spec([T.Resize(64), T.AugMix(), T.PILToTensor()])


def test_tensor_policies_and_bilinear_affine_are_refused_pil_and_nearest_are_not(capability):
    V = v2()
    I = V.InterpolationMode
    capability("DEFAULT")
    for op in (V.TrivialAugmentWide(), V.RandAugment(), V.AutoAugment(),
               V.RandomAffine(20, interpolation=I.BILINEAR), V.RandomRotation(30, interpolation=I.BILINEAR)):
        name = type(op).__name__
        with pytest.raises(ValueError, match=rf"transform 2 \({name}\): {name} on a tensor computes in float32"):
            RT.to_spec([V.Resize((32, 32)), V.ToImage(), op])
    # on PIL images these are Pillow's ops; nearest on tensors holds too
    for ops in ([V.Resize((32, 32)), V.TrivialAugmentWide(), V.PILToTensor()],
                [V.Resize((32, 32)), V.RandomAffine(20, interpolation=I.BILINEAR), V.PILToTensor()],
                [V.Resize((32, 32)), V.ToImage(), V.RandomAffine(20)],
                [V.Resize((32, 32)), V.ToImage(), V.RandomRotation(30)]):
        RT.to_spec(ops)


def test_the_dataloader_falls_back_to_torch_and_strict_says_why(capability, train_dir):
    from torchvision import datasets
    capability("DEFAULT")
    dataset = datasets.ImageFolder(train_dir, transform=T.Compose([T.Resize(32), T.CenterCrop(32), T.AugMix(),
                                                                   T.PILToTensor()]))
    with pytest.raises(ValueError, match="cannot run this natively") as e:
        ringfeed.DataLoader(dataset, batch_size=4, strict=True)
    assert "AugMix mixes in float32" in str(e.value) and "ATEN_CPU_CAPABILITY=avx2" in str(e.value)
    with pytest.warns(UserWarning, match="using torch's DataLoader"):
        loader = ringfeed.DataLoader(dataset, batch_size=4)
    assert loader.backend == "torch" and "AugMix" in loader.fallback_reason
