"""References for the places an independent mutation test found unguarded: stop rules met exactly,
the final check of a run, chained comparisons in claim rules, table number formatting, the
Neyshabur et al. bound at depth 2 (where ln(L h) differs from ln h), and the contrastive encoder's
threshold, which is not differentiated."""
import math

import pytest
import torch
import torch.nn.functional as F

from gtlib import contrastive as CL
from gtlib import uniform as U
from gtlib.claims import evaluate_rule
from gtlib.display import fmt
from gtlib.models import MLP
from gtlib.train import TrainConfig, stop_reason, train


def test_a_target_accuracy_met_exactly_stops_training():
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0]])
    y = torch.tensor([0, 1, 1, 0])                       # accuracy exactly 0.5
    assert stop_reason(logits, y, TrainConfig(target_train_acc=0.5)) == "target_train_acc"
    assert stop_reason(logits, y, TrainConfig(target_train_acc=0.75)) is None
    y_all = torch.tensor([0, 1, 0, 1])                   # accuracy exactly 1.0
    assert stop_reason(logits, y_all, TrainConfig(target_train_acc=1.0)) == "target_train_acc"


def test_the_last_step_is_always_checked():
    torch.manual_seed(0)
    x, y = torch.randn(12, 3), torch.arange(12) % 2
    h = train(MLP(3, 4, 1, 2), x, y, TrainConfig(batch_size=None, epochs=7, check_every=5))
    assert h.step == [0, 5, 7] and h.steps_taken == 7


@pytest.mark.parametrize("rule,expected", [("1 < 3 < 2", False), ("1 < 2 < 3", True),
                                           ("3 > 2 > 2", False), ("x <= y <= z", True)])
def test_chained_comparisons_compare_neighbours(rule, expected):
    assert evaluate_rule(rule, {"x": 1, "y": 1, "z": 2}) is expected
    assert eval(rule, {}, {"x": 1, "y": 1, "z": 2}) is expected


@pytest.mark.parametrize("value,text", [(0.000123, "0.000123"), (123456.0, "1.23e+05"),
                                        (0.5, "0.5"), (2, "2"), (float("nan"), "nan")])
def test_fmt_uses_significant_digits(value, text):
    assert fmt(value) == text


def test_neyshabur_bound_at_depth_two_by_hand():
    # two layers 2 I_2 from init 0: L = 2, h = 2, ||W_l||_2 = 2, ||W_l||_F^2 = 8
    w, w0 = [2 * torch.eye(2)] * 2, [torch.zeros(2, 2)] * 2
    got = U.neyshabur_bound(w, w0, input_norm=1.0, gamma=1.0, n=4)
    want = math.sqrt(1 * 2 ** 2 * 2 * math.log(2 * 2) * (2 * 2) ** 2 * (8 / 4 + 8 / 4) / 4)
    assert got == pytest.approx(want) and got == pytest.approx(13.32, abs=0.01)


def test_encoder_threshold_is_not_differentiated():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(1, 3, 4, 5, generator=g, dtype=torch.float64)
    W = torch.randn(1, 6, 5, generator=g, dtype=torch.float64, requires_grad=True)
    A = torch.randn(1, 5, 5, generator=g, dtype=torch.float64) * 0.1
    CL.encode(X, W, A, beta=0.3).sum().backward()
    # reference: the same encoder written out, with the threshold a constant
    b = (0.3 * W.detach().norm(dim=-1))[:, None, None, :]
    W2 = W.detach().clone().requires_grad_(True)
    H = torch.softmax(torch.einsum("enld,edf,enkf->enlk", X, A, X), dim=-1) @ X
    S = torch.einsum("enld,emd->enlm", H, W2)
    (F.relu(S - b) - F.relu(-S - b)).sum().backward()
    assert torch.allclose(W.grad, W2.grad, atol=1e-10)
