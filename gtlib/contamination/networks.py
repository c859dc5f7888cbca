"""Feature contamination: two-layer networks, E of them at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ..checks import (
    SEED,
    InstanceOf,
    Options,
    Tensor,
    boundary,
    count,
    fraction,
    nonnegative,
    positive,
    tuple_of,
)
from ..config import Config, param
from ..models import ACTIVATIONS, activation
from .common import _ACTS, _same_dtype, _X, BINARY_LOSSES, OPTIMIZERS

__all__ = ["init_two_layer"]


@dataclass(frozen=True)
class NetSpec(Config):
    """How one member of a :class:`TwoLayerNets` stack is built and trained.

    ``act``: an activation of :data:`gtlib.models.ACTIVATIONS` (``"identity"`` gives the linear
    network of the paper's comparison); ``loss``: ``"hinge"`` (``max(0, 1 - y f)``) or
    ``"logistic"`` (``log(1 + exp(-y f))``); ``optimizer``: ``"sgd"`` (with ``momentum``, PyTorch's
    coupled weight decay) or ``"adamw"`` (decoupled weight decay, betas 0.9/0.999).
    """

    act: str = param("relu", Options(tuple(ACTIVATIONS)))
    loss: str = param("hinge", Options(BINARY_LOSSES))
    optimizer: str = param("sgd", Options(OPTIMIZERS))
    lr: float = param(1e-3, positive())
    momentum: float = param(0.9, fraction("left"))
    weight_decay: float = param(1e-3, nonnegative())
    label: str = param("", InstanceOf(str))

    @property
    def name(self) -> str:
        return self.label or f"{self.act}/{self.optimizer}/{self.loss}"


class TwoLayerNets(torch.nn.Module):
    """E two-layer networks ``f_e(x) = a_e . act_e(W_e x + b_e) + c_e`` evaluated together.

    Parameters
    ----------
    W : tensor (E, h, d)
        First-layer weights.
    acts : sequence of E activation names
        One per member; members are grouped by activation in the forward pass.
    a : tensor (E, h)
        Output weights.
    b : tensor (E, h) or None
        First-layer biases (None: no biases, as in the theory).
    c : tensor (E,) or None
        Output biases.
    train_output : bool
        If False, ``a`` (and ``c``) are frozen buffers, as in the paper's theory configuration.
    """

    @boundary(
        W=Tensor("float", 3),
        acts=_ACTS,
        a=Tensor("float", 2),
        b=Tensor("float", 2, optional=True),
        c=Tensor("float", 1, optional=True),
    )
    def __init__(
        self,
        W: torch.Tensor,
        acts: Sequence[str],
        a: torch.Tensor,
        b: torch.Tensor | None = None,
        c: torch.Tensor | None = None,
        train_output: bool = False,
    ):
        super().__init__()
        E, h, _ = W.shape
        if len(acts) != E:
            raise ValueError(
                f"acts must have one entry per member ({E}), got {len(acts)}"
            )
        for name, v, shape in (("a", a, (E, h)), ("b", b, (E, h)), ("c", c, (E,))):
            if v is None:
                continue
            if tuple(v.shape) != shape:
                raise ValueError(
                    f"{name} must have shape {shape}, got {tuple(v.shape)}"
                )
            _same_dtype(name, v, W, "W")
            if v.device != W.device:
                raise ValueError(
                    f"{name} must be on W's device ({W.device}), got {v.device}"
                )
        self.acts = list(acts)
        self.W = torch.nn.Parameter(W.detach().clone())
        self.b = None if b is None else torch.nn.Parameter(b.detach().clone())
        if train_output:
            self.a = torch.nn.Parameter(a.detach().clone())
            self.c = None if c is None else torch.nn.Parameter(c.detach().clone())
        else:
            self.register_buffer("a", a.detach().clone())
            self.register_buffer("c", None if c is None else c.detach().clone())
        groups: dict[str, list[int]] = {}
        for i, name in enumerate(self.acts):
            groups.setdefault(name, []).append(i)
        self._groups = [(name, torch.tensor(idx)) for name, idx in groups.items()]
        order = torch.cat([idx for _, idx in self._groups])
        self.register_buffer("_inverse", torch.argsort(order), persistent=False)
        for k, (_, idx) in enumerate(self._groups):
            self.register_buffer(f"_group{k}", idx, persistent=False)

    @property
    def size(self) -> int:
        return int(self.W.shape[0])

    @property
    def width(self) -> int:
        return int(self.W.shape[1])

    def _check_input(self, x: torch.Tensor, name: str = "x") -> torch.Tensor:
        """``x`` if the members can read it: a finite float tensor ``(n, d)`` or ``(E, n, d)``
        of the weights' dtype (else an error naming ``name``)."""
        _X.check(name, x)
        if x.shape[-1] != self.W.shape[2]:
            raise ValueError(
                f"{name} must have {self.W.shape[2]} columns, got {x.shape[-1]}"
            )
        if x.ndim == 3 and x.shape[0] != self.W.shape[0]:
            raise ValueError(
                f"{name} (E, n, d) must have one sample per member "
                f"({self.W.shape[0]}), got {x.shape[0]}"
            )
        _same_dtype(name, x, self.W, "the weights")
        return x

    def preactivations(self, x: torch.Tensor) -> torch.Tensor:
        """``W_e x + b_e`` for every member, ``(E, n, h)``; ``x`` is ``(n, d)`` or ``(E, n, d)``."""
        return self._preactivations(self._check_input(x))

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """The representation ``act_e(W_e x + b_e)``, ``(E, n, h)``."""
        return self._hidden(self._check_input(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Outputs ``(E, n)``."""
        return self._forward(self._check_input(x))

    # unchecked versions for the training steps (their inputs were checked once, on entry)
    def _preactivations(self, x: torch.Tensor) -> torch.Tensor:
        pre = torch.matmul(x, self.W.transpose(1, 2))
        return pre if self.b is None else pre + self.b.unsqueeze(1)

    def _hidden(self, x: torch.Tensor) -> torch.Tensor:
        pre = self._preactivations(x)
        if len(self._groups) == 1:
            return activation(self._groups[0][0])(pre)
        parts = [
            activation(name)(pre[getattr(self, f"_group{k}")])
            for k, (name, _) in enumerate(self._groups)
        ]
        return torch.cat(parts)[self._inverse]

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        out = (self._hidden(x) * self.a.unsqueeze(1)).sum(-1)
        return out if self.c is None else out + self.c.unsqueeze(1)


@boundary(acts=_ACTS, dim=count(), width=count(), seeds=tuple_of(SEED))
def init_two_layer(
    acts: Sequence[str],
    dim: int,
    width: int,
    seeds: Sequence[int],
    frozen_output: bool = True,
    bias: bool = False,
) -> TwoLayerNets:
    """E freshly initialized two-layer networks, member ``e`` seeded by ``seeds[e]``.

    First-layer weights (and biases) use PyTorch's ``nn.Linear`` default, ``U(-1/sqrt(d), 1/sqrt(d))``.
    With ``frozen_output`` the output layer is fixed at ``+1/h`` on the first half of the units and
    ``-1/h`` on the second (the theory configuration of the paper, ``h`` even); otherwise it is
    trainable, initialized like ``nn.Linear(h, 1)``, with an output bias when ``bias``.

    Parameters
    ----------
    acts : Sequence[str]
        One activation per member; a tuple (at least 1 item) of items each one of ('relu', 'gelu',
        'silu', 'tanh', 'sigmoid', 'leaky_relu', 'identity').
    dim : int
        Input dimension; an int >= 1.
    width : int
        Hidden width; an int >= 1.
    seeds : Sequence[int]
        Seeds, one per model or run; a tuple (at least 1 item) of items each an int in [0, 2**63 -
        1].
    frozen_output : bool, default True
        Whether the output layer is frozen; a bool.
    bias : bool, default False
        Whether the first layer has biases; a bool.

    Returns
    -------
    TwoLayerNets
        The stack of networks.

    Raises
    ------
    TypeError, ValueError
        On a bad size, an unknown activation, seeds and acts of different lengths, or an odd
        ``width`` with ``frozen_output``.
    """
    if len(acts) != len(seeds):
        raise ValueError(
            f"acts and seeds must have equal lengths, got {len(acts)} "
            f"and {len(seeds)}"
        )
    if frozen_output and width % 2:
        raise ValueError(
            f"width must be even with a frozen output layer, got {width}"
        )
    Ws, bs, as_, cs = [], [], [], []
    for s in seeds:
        g = torch.Generator().manual_seed(int(s))
        lim = 1.0 / np.sqrt(dim)
        Ws.append((torch.rand(width, dim, generator=g) * 2 - 1) * lim)
        bs.append((torch.rand(width, generator=g) * 2 - 1) * lim)
        if frozen_output:
            as_.append(
                torch.cat(
                    [
                        torch.full((width // 2,), 1.0 / width),
                        torch.full((width // 2,), -1.0 / width),
                    ]
                )
            )
        else:
            lim2 = 1.0 / np.sqrt(width)
            as_.append((torch.rand(width, generator=g) * 2 - 1) * lim2)
            cs.append((torch.rand((), generator=g) * 2 - 1) * lim2)
    return TwoLayerNets(
        torch.stack(Ws),
        acts,
        torch.stack(as_),
        b=torch.stack(bs) if bias else None,
        c=torch.stack(cs) if (bias and not frozen_output) else None,
        train_output=not frozen_output,
    )
