import pytest
import torch

from gtlib.models import MLP
from gtlib.train import TrainConfig, accuracy, margins, total_steps, train


def blobs(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = torch.randn(n, 2, generator=g) + 3 * (2 * y[:, None] - 1).float()
    return x, y


def test_margins_known_values():
    logits = torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 1.0]])
    assert torch.allclose(margins(logits, torch.tensor([0, 2])), torch.tensor([1.0, -4.0]))
    stacked = torch.stack([logits, -logits])
    assert margins(stacked, torch.tensor([0, 2])).shape == (2, 2)
    assert accuracy(logits, torch.tensor([0, 1])) == 1.0


def test_training_reduces_loss_and_records_probes():
    torch.manual_seed(0)
    x, y = blobs()
    m = MLP(2, 16, 1, 2)
    h = train(m, x, y, TrainConfig(lr=0.1, epochs=5, batch_size=20, check_every=5),
              probes={"w_norm": lambda model: model.layers[0].weight.norm().item()})
    assert h.loss[-1] < h.loss[0] and h.train_acc[-1] > 0.95
    assert len(h.probes["w_norm"]) == len(h.step) and h.steps_taken == total_steps(200, TrainConfig(epochs=5, batch_size=20))


def test_stop_rules():
    torch.manual_seed(0)
    x, y = blobs()
    h = train(MLP(2, 16, 1, 2), x, y, TrainConfig(lr=0.1, epochs=100, batch_size=None,
                                                 target_train_acc=0.95, check_every=1))
    assert h.stopped_by == "target_train_acc" and h.train_acc[-1] >= 0.95 and h.steps_taken < 100
    h = train(MLP(2, 16, 1, 2), x, y, TrainConfig(optimizer="adamw", lr=0.05, epochs=2000, batch_size=None,
                                                 margin_gamma=2.0, margin_fraction=0.9, check_every=5))
    assert h.stopped_by == "margin"


def test_full_batch_step_count():
    assert total_steps(1000, TrainConfig(batch_size=None, epochs=7)) == 7
    assert total_steps(1000, TrainConfig(batch_size=300, epochs=2)) == 8
    assert total_steps(1000, TrainConfig(batch_size=300, epochs=2, steps=5)) == 5


@pytest.mark.parametrize("kw,match", [({"optimizer": "lbfgs"}, "optimizer"), ({"lr": 0}, "lr"),
                                      ({"momentum": 1.0}, "momentum"), ({"batch_size": 0}, "batch_size"),
                                      ({"epochs": 0}, "epochs"), ({"target_train_acc": 1.5}, "target_train_acc"),
                                      ({"margin_fraction": -1}, "margin_fraction"), ({"loss": "hinge"}, "loss"),
                                      ({"margin_gamma": -1.0}, "margin_gamma")])
def test_bad_config(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        TrainConfig(**kw).validate()


def test_bad_data_shapes():
    with pytest.raises(ValueError, match="same n"):
        train(MLP(2, 4, 1, 2), torch.randn(5, 2), torch.zeros(4, dtype=torch.int64), TrainConfig())
    with pytest.raises(ValueError, match="logits"):
        margins(torch.randn(3), torch.zeros(3, dtype=torch.int64))
