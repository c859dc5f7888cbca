"""Tests of gtlib.contrastive.encoder, one section per public function."""

import math
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gtlib import contrastive as C
from tests.chapters.contrastive.helpers import _encode_reference, DT, rng, tiny_cfg
from gtlib.contrastive.data import _make_views, _sample_codes
from gtlib.contrastive.encoder import (
    _brelu,
    _encode,
    _magnitude_mask,
    _random_mask,
    _straight_through_mask,
)


def _encoder_inputs(seed=0, E=2, n=3, L=4, d=5, m=6):
    g = rng(seed)
    X = torch.randn(E, n, L, d, generator=g, dtype=DT)
    W = torch.randn(E, m, d, generator=g, dtype=DT)
    A = torch.randn(E, d, d, generator=g, dtype=DT) * 0.7  # not symmetric
    return X, W, A


def _infonce_loop(f, g, tau):
    n = f.shape[0]
    total = 0.0
    for i in range(n):
        logits = [float(f[i] @ g[j]) / tau for j in range(n)]
        mx = max(logits)
        lse = mx + math.log(sum(math.exp(v - mx) for v in logits))
        total += lse - logits[i]
    return total / n


def _mask_reference(W, fraction):
    norms = np.linalg.norm(W, axis=-1)
    m = len(norms)
    k = int(round(fraction * m))
    order = sorted(range(m), key=lambda r: (norms[r], r))
    mask = np.ones(m)
    mask[order[:k]] = 0.0
    return mask


# =================================================================================================
# _brelu
# =================================================================================================
def test_brelu_is_odd_with_a_dead_zone():
    s = torch.linspace(-3, 3, 13)
    out = _brelu(s, 1.0)
    assert torch.allclose(out, -_brelu(-s, 1.0))
    assert torch.all(out[s.abs() <= 1] == 0)
    assert torch.allclose(out[s > 1], s[s > 1] - 1)


def test_brelu_clamp_form_equals_the_relu_form():
    g = torch.Generator().manual_seed(3)
    s = torch.randn(4, 7, 5, generator=g)
    b = torch.rand(1, 1, 5, generator=g)
    relu_form = torch.relu(s - b) - torch.relu(-s - b)
    assert torch.equal(_brelu(s, b), relu_form)  # exact, not just close
    assert torch.equal(_brelu(s, 0.4), torch.relu(s - 0.4) - torch.relu(-s - 0.4))
    neg = torch.full(
        (1, 1, 5), -0.3
    )  # a negative threshold keeps the defining formula
    assert torch.equal(_brelu(s, neg), torch.relu(s + 0.3) - torch.relu(-s + 0.3))
    s.requires_grad_()
    _brelu(s, b).sum().backward()
    assert torch.equal(
        s.grad, (s.detach().abs() > b).float()
    )  # slope 1 outside the dead zone


def test_brelu_gradient_equals_autograds_clamp_gradient():
    g = torch.Generator().manual_seed(5)
    b = torch.rand(1, 1, 6, generator=g)
    s = torch.randn(3, 4, 6, generator=g)
    s[0, 0] = b[0, 0]  # exactly on the edge of the dead zone
    s[0, 1] = -b[0, 0]
    up = torch.randn(3, 4, 6, generator=g)
    fast, slow = s.clone().requires_grad_(), s.clone().requires_grad_()
    (_brelu(fast, b) * up).sum().backward()
    (slow - torch.clamp(slow, -b, b)).mul(up).sum().backward()
    assert torch.equal(fast.grad, slow.grad)
    with torch.no_grad():  # the forward alone, without a graph
        assert torch.equal(_brelu(s, b), s - torch.clamp(s, -b, b))


def test_brelu_threshold_with_a_gradient_takes_autograds_way():
    s = torch.tensor([0.1, 3.0])
    b = torch.tensor(0.5, requires_grad=True)
    _brelu(s, b).sum().backward()
    assert b.grad.item() == -1.0  # d(3 - b)/db; none from the dead zone


@pytest.mark.reference
def test_brelu_by_hand_with_per_column_thresholds():
    s = torch.tensor([[-3.0, -0.5, 0.25, 2.0], [1.0, -1.0, 0.5, -0.75]])
    b = torch.tensor([0.5, 1.0, 0.25, 0.0])
    expect = torch.tensor([[-2.5, 0.0, 0.0, 2.0], [0.5, 0.0, 0.25, -0.75]])
    assert torch.equal(_brelu(s, b), expect)
    # exactly at +-b: zero (dead zone closed); b = 0 is the identity
    assert _brelu(torch.tensor([0.75, -0.75]), 0.75).tolist() == [0.0, 0.0]
    assert _brelu(torch.tensor([-2.0, 3.0]), 0.0).tolist() == [-2.0, 3.0]


# =================================================================================================
# _straight_through_mask
# =================================================================================================
@pytest.mark.reference
def test_straight_through_mask_forward_is_masked_backward_is_identity():
    f = torch.tensor([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], requires_grad=True)
    mask = torch.tensor([1.0, 0.0, 1.0])
    out = _straight_through_mask(f, mask)
    assert out.tolist() == [[1.5, 0.0, 3.0], [0.5, 0.0, -1.0]]
    c = torch.tensor([[2.0, 3.0, 5.0], [7.0, 11.0, 13.0]])
    (out * c).sum().backward()
    assert torch.equal(
        f.grad, c
    )  # every entry, masked or not, gets its own gradient
    out2 = _straight_through_mask(f.detach(), torch.ones(2, 1))
    assert torch.equal(out2, f.detach())
    with pytest.raises(ValueError, match="broadcast"):
        _straight_through_mask(f, torch.ones(2))


# =================================================================================================
# _encode
# =================================================================================================
def test_pruned_forward_but_gradients_reach_masked_neurons():
    torch.manual_seed(0)
    X = torch.randn(1, 8, 3, 5)
    W = torch.randn(1, 4, 5, requires_grad=True)
    A = torch.zeros(1, 5, 5)
    mask = torch.tensor([[1.0, 0.0, 1.0, 0.0]])
    f = _encode(X, W, A, beta=0.0, mask=mask)
    assert torch.all(f[..., 1] == 0) and torch.all(f[..., 3] == 0)
    W2 = W.detach().clone().requires_grad_()
    _encode(X, W2, A, beta=0.0, mask=mask).sum().backward()
    assert W2.grad[0, 1].abs().sum() > 0 and W2.grad[0, 3].abs().sum() > 0
    W3 = W.detach().clone().requires_grad_()
    loss = _encode(X, W3, A, beta=0.0).sum()
    loss.backward()
    assert torch.allclose(
        W2.grad, W3.grad
    )  # straight-through: same gradient as unmasked


@pytest.mark.reference
def test_encode_matches_the_loop_formula_with_asymmetric_attention():
    X, W, A = _encoder_inputs()
    for beta in (0.0, 0.35):
        got = _encode(X, W, A, beta)
        assert got.shape == (2, 3, 6)
        torch.testing.assert_close(
            got, _encode_reference(X, W, A, beta), rtol=1e-10, atol=1e-10
        )
    # the threshold bites: beta changes the output; the mask zeroes its neurons
    assert not torch.allclose(_encode(X, W, A, 0.0), _encode(X, W, A, 0.35))
    mask = torch.tensor(
        [[1.0, 0.0, 1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]], dtype=DT
    )
    torch.testing.assert_close(
        _encode(X, W, A, 0.35, mask),
        _encode_reference(X, W, A, 0.35, mask),
        rtol=1e-10,
        atol=1e-10,
    )
    # zero attention is the uniform average of the tokens
    Z = torch.zeros_like(A)
    H = X.mean(2, keepdim=True).expand_as(X)
    S = torch.einsum("enld,emd->enlm", H, W)
    b = 0.2 * W.norm(dim=-1)[:, None, None, :]
    torch.testing.assert_close(
        _encode(X, W, Z, 0.2), (torch.relu(S - b) - torch.relu(-S - b)).sum(2)
    )


@pytest.mark.reference
def test_encode_gradient_treats_the_threshold_as_a_constant():
    X, W, A = _encoder_inputs(seed=1, E=1, n=2, L=3, d=4, m=3)
    mask = torch.tensor([[1.0, 0.0, 1.0]], dtype=DT)
    c = torch.randn(1, 2, 3, generator=rng(2), dtype=DT)
    W1, A1 = W.clone().requires_grad_(), A.clone().requires_grad_()
    (_encode(X, W1, A1, 0.3, mask) * c).sum().backward()
    W2, A2 = W.clone().requires_grad_(), A.clone().requires_grad_()
    (
        _encode_reference(X, W2, A2, 0.3) * c
    ).sum().backward()  # no mask: straight-through
    torch.testing.assert_close(W1.grad, W2.grad, rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(A1.grad, A2.grad, rtol=1e-9, atol=1e-10)


@pytest.mark.reference
def test_encode_is_odd_in_the_tokens():
    X, W, A = _encoder_inputs(seed=3)
    torch.testing.assert_close(_encode(-X, W, A, 0.25), -_encode(X, W, A, 0.25))


@pytest.mark.reference
def test_pruning_masks_the_online_branch_only():
    """With the mask of step 0 known, one step of an unpruned and a pruned model trained side by
    side equals a hand step whose online encoder is masked (straight-through, pruned model only)
    and whose target is not."""
    cfg = tiny_cfg(steps=1, prune_every=5)
    run = C.train_encoders(cfg, [2.0, 2.0], [0.0, 0.5], seed=0)
    M = C.feature_dictionary(cfg.dim, cfg.n_features, seed=0)
    W = (
        torch.randn(cfg.neurons, cfg.dim, generator=rng(0)) * cfg.init_scale
    ).expand(2, -1, -1)
    mask = _magnitude_mask(W, [0.0, 0.5])
    assert mask[0].tolist() == [1.0] * 6 and mask[1].sum() == 3
    W = W.clone().requires_grad_()
    A = torch.zeros(2, cfg.dim, cfg.dim, requires_grad=True)
    g = rng(999)
    freqs = C.feature_frequencies(cfg.n_features, cfg.n_minority, cfg.base_freq, 2.0)
    z = _sample_codes(freqs.expand(2, -1).contiguous(), cfg.batch, g)
    X1 = _make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
    X2 = _make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
    f1 = _encode(X1, W, A, 0.0, mask)
    f2 = _encode(X2, W, A, 0.0).detach()
    loss = C.infonce(f1, f2, cfg.tau).sum()
    gW, gA = torch.autograd.grad(loss, [W, A])
    with torch.no_grad():
        W1 = W - cfg.lr * (gW + cfg.weight_decay * W)
    torch.testing.assert_close(run.W, W1, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(run.W[0], run.W[1], rtol=1e-5, atol=1e-7)


@pytest.mark.reference
def test_encoder_threshold_is_not_differentiated():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(1, 3, 4, 5, generator=g, dtype=torch.float64)
    W = torch.randn(1, 6, 5, generator=g, dtype=torch.float64, requires_grad=True)
    A = torch.randn(1, 5, 5, generator=g, dtype=torch.float64) * 0.1
    _encode(X, W, A, beta=0.3).sum().backward()
    # reference: the same encoder written out, with the threshold a constant
    b = (0.3 * W.detach().norm(dim=-1))[:, None, None, :]
    W2 = W.detach().clone().requires_grad_(True)
    H = torch.softmax(torch.einsum("enld,edf,enkf->enlk", X, A, X), dim=-1) @ X
    S = torch.einsum("enld,emd->enlm", H, W2)
    (F.relu(S - b) - F.relu(-S - b)).sum().backward()
    assert torch.allclose(W.grad, W2.grad, atol=1e-10)


# =================================================================================================
# contrastive.infonce
# =================================================================================================
def test_infonce_matches_direct_formula():
    torch.manual_seed(0)
    f, g = torch.randn(5, 3), torch.randn(5, 3)
    tau = 0.7
    direct = 0.0
    for i in range(5):
        num = math.exp(float(f[i] @ g[i]) / tau)
        den = sum(math.exp(float(f[i] @ g[j]) / tau) for j in range(5))
        direct += -math.log(num / den) / 5
    assert math.isclose(float(C.infonce(f, g, tau)), direct, rel_tol=1e-5)
    batched = C.infonce(torch.stack([f, g]), torch.stack([g, f]), tau)
    assert batched.shape == (2,)
    with pytest.raises(ValueError, match="tau"):
        C.infonce(f, g, 0.0)
    with pytest.raises(ValueError, match="same shape"):
        C.infonce(f, g[:4], 1.0)


def test_infonce_stops_gradient_on_target():
    f = torch.randn(4, 3, requires_grad=True)
    g = torch.randn(4, 3, requires_grad=True)
    C.infonce(f, g, 1.0).backward()
    assert f.grad is not None and g.grad is None


@pytest.mark.reference
def test_infonce_batched_is_one_direct_loss_per_model_on_rectangular_batches():
    g = rng(4)
    f = torch.randn(3, 5, 2, generator=g, dtype=DT)
    t = torch.randn(3, 5, 2, generator=g, dtype=DT)
    got = C.infonce(f, t, 0.45)
    assert got.shape == (3,)
    for e in range(3):
        assert float(got[e]) == pytest.approx(
            _infonce_loop(f[e], t[e], 0.45), rel=1e-12
        )
    # not symmetric in its two arguments (row-wise softmax over the targets)
    assert float(C.infonce(t[0], f[0], 0.45)) == pytest.approx(
        _infonce_loop(t[0], f[0], 0.45), rel=1e-12
    )
    assert float(C.infonce(t[0], f[0], 0.45)) != pytest.approx(
        float(got[0]), rel=1e-6
    )
    # one pair: log 1 = 0
    assert float(C.infonce(f[0, :1], t[0, :1], 0.3)) == 0.0
    with pytest.raises(ValueError, match="same shape"):
        C.infonce(f, t.float(), 1.0)


@pytest.mark.reference
def test_infonce_gradient_against_the_closed_form():
    """d L / d f_i = (1/n tau) (sum_j softmax_ij g_j - g_i)."""
    g = rng(5)
    f = torch.randn(4, 3, generator=g, dtype=DT, requires_grad=True)
    t = torch.randn(4, 3, generator=g, dtype=DT)
    tau = 0.8
    C.infonce(f, t, tau).backward()
    p = torch.softmax(f.detach() @ t.T / tau, -1)
    torch.testing.assert_close(f.grad, (p @ t - t) / (4 * tau))


# =================================================================================================
# contrastive.infonce_orthogonal_closed_form
# =================================================================================================
def test_infonce_identical_orthogonal_views_closed_form():
    n, a, tau = 6, 2.5, 0.8
    f = math.sqrt(a) * torch.eye(n)[:, :n]
    assert math.isclose(
        float(C.infonce(f, f.clone(), tau)),
        C.infonce_orthogonal_closed_form(a, n, tau),
        rel_tol=1e-6,
    )


@pytest.mark.reference
def test_infonce_orthogonal_closed_form_by_hand():
    assert C.infonce_orthogonal_closed_form(2.0, 3, 1.0) == pytest.approx(
        math.log(1 + 2 * math.exp(-2.0)), rel=1e-14
    )
    assert C.infonce_orthogonal_closed_form(1.5, 7, 0.5) == pytest.approx(
        math.log(1 + 6 * math.exp(-3.0)), rel=1e-14
    )
    assert C.infonce_orthogonal_closed_form(0.0, 5, 2.0) == pytest.approx(
        math.log(5)
    )  # chance
    assert C.infonce_orthogonal_closed_form(3.0, 1, 2.0) == 0.0
    # and it is what infonce computes on such a batch (n = 4 in dimension 6)
    v = math.sqrt(1.3) * torch.eye(6, dtype=DT)[:4]
    assert float(C.infonce(v, v, 0.6)) == pytest.approx(
        C.infonce_orthogonal_closed_form(1.3, 4, 0.6), rel=1e-12
    )


# =================================================================================================
# _magnitude_mask
# =================================================================================================
def test_magnitude_mask_removes_exact_fraction_of_smallest():
    W = torch.tensor([[[3.0, 0.0], [0.1, 0.0], [2.0, 0.0], [0.5, 0.0]]])
    mask = _magnitude_mask(W, 0.5)
    assert mask.tolist() == [[1.0, 0.0, 1.0, 0.0]]
    W2 = torch.randn(3, 10, 4)
    masks = _magnitude_mask(W2, [0.0, 0.3, 1.0])
    assert masks.sum(1).tolist() == [10.0, 7.0, 0.0]
    with pytest.raises(ValueError, match="fraction"):
        _magnitude_mask(W2, 1.5)
    with pytest.raises(ValueError, match="one entry per model"):
        _magnitude_mask(W2, [0.1, 0.2])


@pytest.mark.reference
def test_magnitude_mask_rounds_the_count_and_breaks_ties_by_index():
    # norms 2, 1, 1, 3, 1, 0.5, 4  (three ties at 1)
    W = torch.tensor(
        [
            [2.0, 0.0],
            [0.0, 1.0],
            [1.0, 0.0],
            [0.0, 3.0],
            [0.6, 0.8],
            [0.5, 0.0],
            [0.0, -4.0],
        ]
    )
    # round(0.27 * 7) = round(1.89) = 2: the two smallest (0.5 at 5, then the first 1 at 1)
    assert _magnitude_mask(W, 0.27).tolist() == [1, 0, 1, 1, 1, 0, 1]
    # round(0.36 * 7) = round(2.52) = 3 (not floor 2); ties: index 1 before index 2
    assert _magnitude_mask(W, 0.36).tolist() == [1, 0, 0, 1, 1, 0, 1]
    # round(0.3 * 7) = round(2.1) = 2 (not ceil 3)
    assert _magnitude_mask(W, 0.3).tolist() == [1, 0, 1, 1, 1, 0, 1]
    assert _magnitude_mask(W, 0.0).tolist() == [1] * 7
    assert _magnitude_mask(W, 1.0).tolist() == [0] * 7
    assert _magnitude_mask(W, 6 / 7).tolist() == [
        0,
        0,
        0,
        0,
        0,
        0,
        1,
    ]  # only the largest stays
    assert _magnitude_mask(W.double(), 0.5).dtype == DT


@pytest.mark.reference
def test_magnitude_mask_batched_against_a_sorting_reference():
    W = torch.randn(3, 9, 4, generator=rng(7))
    fr = [0.2, 0.55, 0.8]
    got = _magnitude_mask(W, fr)
    assert got.shape == (3, 9)
    for e in range(3):
        np.testing.assert_array_equal(
            got[e].numpy(), _mask_reference(W[e].numpy(), fr[e])
        )
    one = _magnitude_mask(W, 0.55)  # a number applies to every model
    for e in range(3):
        np.testing.assert_array_equal(
            one[e].numpy(), _mask_reference(W[e].numpy(), 0.55)
        )
    # only the norm over d counts: permuting coordinates of a row changes nothing
    assert torch.equal(_magnitude_mask(W.flip(-1), fr), got)
    Wg = W.clone().requires_grad_()
    assert torch.equal(_magnitude_mask(Wg, fr), got)


# =================================================================================================
# _random_mask
# =================================================================================================
def test_random_mask_counts_and_ignores_the_weights():
    W = torch.randn(3, 10, 4, generator=torch.Generator().manual_seed(0))
    m1 = _random_mask(W, [0.5, 0.2, 0.0], torch.Generator().manual_seed(1))
    assert m1.shape == (3, 10) and (1 - m1).sum(1).tolist() == [5.0, 2.0, 0.0]
    m2 = _random_mask(7 * W + 1, [0.5, 0.2, 0.0], torch.Generator().manual_seed(1))
    assert torch.equal(m1, m2)  # only the shape of W is read
    assert _random_mask(W[0], 0.3, torch.Generator().manual_seed(1)).shape == (10,)
    draws = torch.stack(
        [
            _random_mask(W[:1], 0.5, torch.Generator().manual_seed(s))[0]
            for s in range(200)
        ]
    )
    assert torch.allclose(
        draws.mean(0), torch.full((10,), 0.5), atol=0.12
    )  # uniform
    with pytest.raises(ValueError, match="fraction"):
        _random_mask(W, 1.5, torch.Generator())
    with pytest.raises(ValueError, match="fraction"):
        _random_mask(W, [0.5, 0.5], torch.Generator())
