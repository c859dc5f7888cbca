"""Tests for the two mutants that survived the third independent mutation test (issue 19,
section 6; 86 of 88 caught before these tests). Both are input checks of gtlib.train."""
import pytest
import torch

from gtlib import train as T
from gtlib.models import BatchedMLP, MLP


def test_train_refuses_a_stack_of_networks_and_names_the_right_function():
    # A BatchedMLP (E members) is trained by train_ensemble; train() used to read its class
    # count and then fail deep inside cross_entropy with mismatched batch sizes.
    stack = BatchedMLP.init([0, 1], 6, 4, 1, 3)
    x, y = torch.randn(8, 6), torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    with pytest.raises(TypeError, match="model must be one network.*train_ensemble"):
        T.train(stack, x, y, T.TrainConfig())


def test_train_reads_the_class_count_from_the_last_layers_outputs():
    # 6 inputs, 3 outputs: labels 0..2 train, label 3 is refused naming y (not the input width).
    net = MLP(6, 5, 1, 3)
    x = torch.randn(8, 6)
    T.train(net, x, torch.tensor([0, 1, 2, 0, 1, 2, 0, 1]), T.TrainConfig(steps=1))
    with pytest.raises(ValueError, match=r"y must hold labels in \[0, 3\)"):
        T.train(net, x, torch.tensor([0, 1, 3, 0, 1, 2, 0, 1]), T.TrainConfig(steps=1))


@pytest.mark.parametrize("members", [1, 2, 4])
def test_accuracy_refuses_per_member_labels_for_another_number_of_members(members):
    logits = torch.randn(3, 5, 4)
    with pytest.raises(ValueError, match=r"y must have shape \(5,\) or \(E, 5\)"):
        T.accuracy(logits, torch.randint(4, (members, 5)))
    assert T.accuracy(logits, torch.randint(4, (3, 5))).shape == (3,)
