"""Tests of gtlib.contamination.common, one section per public function."""

import pytest
import torch
from tests.chapters.contamination.helpers import axis_embedding, NAN, nan_at, refused


# =================================================================================================
# gtlib.contamination as a whole
# =================================================================================================
def test_embedding_is_orthonormal(emb):
    P = torch.cat([emb.core, emb.background], 1)
    assert torch.allclose(P.T @ P, torch.eye(7), atol=1e-5)
    assert torch.allclose(emb.core.T @ emb.background, torch.zeros(4, 3), atol=1e-6)


@pytest.mark.reference
def test_embed_is_core_plus_background_exactly():
    emb = axis_embedding()
    zc = torch.tensor([[1.5, -2.0], [0.25, 3.0]])
    zb = torch.tensor([[7.0, 11.0, 13.0], [-1.0, 0.5, 2.0]])
    x = emb.embed(zc, zb)
    want = torch.tensor(
        [[-2.0, 7.0, 13.0, 0.0, 1.5, 11.0], [3.0, -1.0, 2.0, 0.0, 0.25, 0.5]]
    )
    assert torch.equal(x, want)
    assert emb.dim == 6
    moved = emb.to("cpu")
    assert torch.equal(moved.core, emb.core) and torch.equal(
        moved.background, emb.background
    )


@pytest.mark.boundary
def test_embedding_methods(emb_bou):
    refused(
        ValueError,
        "z_core",
        emb_bou.embed,
        torch.full((4, 3), NAN),
        torch.zeros(4, 3),
    )
    refused(
        TypeError,
        "z_background",
        emb_bou.embed,
        torch.zeros(4, 3),
        torch.zeros(4, 3).long(),
    )
    refused(ValueError, "device", emb_bou.to, "gpu9")
    refused(TypeError, "device", emb_bou.to, 3.5)
    assert emb_bou.to("cpu").core.device.type == "cpu"


@pytest.mark.boundary
def test_forward_hidden_preactivations(nets, toy):
    for method in (nets.forward, nets.hidden, nets.preactivations, nets):
        refused(ValueError, "x", method, nan_at(toy.x))
        refused(ValueError, "x", method, toy.x[:0])
        refused(TypeError, "x", method, toy.x.long())
        refused(TypeError, "x", method, toy.x.double())
        refused(ValueError, "x", method, toy.x[:, :5])
    refused(ValueError, "one sample per member", nets, toy.x.expand(3, -1, -1))
