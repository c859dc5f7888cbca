"""Multilayer perceptrons, the one architecture most chapters need.

An :class:`MLP` is ``Linear -> act -> ... -> Linear`` with ``depth`` hidden layers of ``width``
units. Its layers are kept in ``model.layers`` (a ``ModuleList`` of ``nn.Linear``) so that the
chapters can read, permute and interpolate weights layer by layer.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .checks import check_finite, check_int

#: Largest number of parameters an :class:`MLP` may hold (2**31, 8 GiB of float32).
MAX_PARAMETERS = 2**31

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "silu": F.silu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "leaky_relu": lambda z: F.leaky_relu(z, 0.1),
    "identity": lambda z: z,
}


def activation(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The activation function called ``name`` (one of :data:`ACTIVATIONS`)."""
    if not isinstance(name, str):
        raise TypeError(f"activation must be a str, got {type(name).__name__}")
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {name!r}")
    return ACTIVATIONS[name]


class MLP(nn.Module):
    """A fully connected network ``in_dim -> [width] * depth -> out_dim``.

    Parameters
    ----------
    in_dim, out_dim : int
        Input and output sizes.
    width : int
        Hidden units per layer.
    depth : int
        Number of hidden layers (0 gives a linear model).
    bias : bool
        Whether the linear layers have biases (Nagarajan and Kolter's nets have none).
    activation : str
        A name from :data:`ACTIVATIONS`.

    Initialization is PyTorch's default (Kaiming-uniform with ``a=sqrt(5)``).
    """

    def __init__(self, in_dim: int, width: int, depth: int, out_dim: int, bias: bool = True,
                 activation: str = "relu"):
        super().__init__()
        in_dim = check_int("in_dim", in_dim)
        out_dim = check_int("out_dim", out_dim)
        width = check_int("width", width)
        depth = check_int("depth", depth, minimum=0)
        if not isinstance(bias, (bool, np.bool_)):
            raise TypeError(f"bias must be a bool, got {type(bias).__name__}")
        self.act_name = activation
        self.act = globals()["activation"](activation)
        sizes = [in_dim] + [width] * depth + [out_dim]
        n_params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
        if n_params > MAX_PARAMETERS:
            raise ValueError(f"MLP(in_dim={in_dim}, width={width}, depth={depth}, out_dim={out_dim}) "
                             f"would hold {n_params:.3g} parameters, more than {MAX_PARAMETERS}: "
                             "use a smaller width or depth")
        self.layers = nn.ModuleList(nn.Linear(a, b, bias=bias) for a, b in zip(sizes[:-1], sizes[1:]))

    @property
    def depth(self) -> int:
        return len(self.layers) - 1

    def _check_input(self, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        if x.ndim != 2 or x.shape[1] != self.layers[0].in_features:
            raise ValueError(f"x must have shape (batch, {self.layers[0].in_features}), "
                             f"got {tuple(x.shape)}")
        dtype = self.layers[0].weight.dtype
        if x.dtype != dtype:
            raise TypeError(f"x must have the network's dtype {dtype}, got {x.dtype} "
                            f"(convert with x.to({dtype}) or the network with .to({x.dtype}))")
        check_finite("x", x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check_input(x)
        return self._forward(x)

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` without the input checks (training: the data were checked once)."""
        for layer in self.layers[:-1]:
            x = self.act(layer(x))
        return self.layers[-1](x)

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Post-activation features of every hidden layer, then the logits."""
        self._check_input(x)
        out = []
        for layer in self.layers[:-1]:
            x = self.act(layer(x))
            out.append(x)
        out.append(self.layers[-1](x))
        return out
