"""Multilayer perceptrons, the one architecture most chapters need, alone or E at a time.

An :class:`MLP` is ``Linear -> act -> ... -> Linear`` with ``depth`` hidden layers of ``width``
units. Its layers are kept in ``model.layers`` (a ``ModuleList`` of ``nn.Linear``) so that the
chapters can read, permute and interpolate weights layer by layer.

A :class:`BatchedMLP` stores the weights of E MLPs of one shape as stacked tensors ``W_l`` of
shape ``(E, out, in)`` and runs all of them with one batched matmul per layer: the book's main
performance lever (:func:`gtlib.train.train_ensemble` trains such a stack). This is what
``torch.func.stack_module_state`` + ``vmap`` does for arbitrary modules; for MLPs the explicit
batched matmul is simpler and as fast. Members may differ in width through ``hidden_mask``: a
``(E, width)`` 0/1 mask applied after every hidden activation turns a common maximum width into E
narrower nets (a masked unit receives no gradient and contributes nothing).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .checks import Device, Tensor, check_finite, check_int, check_seed, check_seeds

__all__ = [
    "MLP",
    "BatchedMLP",
    "make_mlp",
    "activation",
    "ACTIVATIONS",
    "MAX_PARAMETERS",
]

#: Largest number of parameters an :class:`MLP` may hold (2**31, 8 GiB of float32).
MAX_PARAMETERS = 2**31

#: The activations by name (``"leaky_relu"`` has negative slope 0.1); see
#: :func:`gtlib.models.activation`.
#:
#: :meta hide-value:
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
    """The activation function called ``name`` (one of :data:`ACTIVATIONS`).

    Parameters
    ----------
    name : str
        ``"relu"``, ``"gelu"``, ``"silu"``, ``"tanh"``, ``"sigmoid"``, ``"leaky_relu"`` (negative
        slope 0.1) or ``"identity"``.

    Returns
    -------
    callable
        The elementwise function, ``torch.Tensor -> torch.Tensor``.

    Raises
    ------
    TypeError
        If ``name`` is not a str.
    ValueError
        If ``name`` is not a key of :data:`ACTIVATIONS`.
    """
    if not isinstance(name, str):
        raise TypeError(f"activation must be a str, got {type(name).__name__}")
    if name not in ACTIVATIONS:
        raise ValueError(
            f"activation must be one of {sorted(ACTIVATIONS)}, got {name!r}"
        )
    return ACTIVATIONS[name]


class MLP(nn.Module):
    r"""A fully connected network ``in_dim -> [width] * depth -> out_dim``.

    With ``L = depth`` hidden layers and activation :math:`\sigma` it computes

    .. math::

        h^{(0)} = x, \qquad
        h^{(l+1)} = \sigma\big(W^{(l)} h^{(l)} + b^{(l)}\big), \qquad
        f(x) = W^{(L)} h^{(L)} + b^{(L)}.

    The layers are kept in ``model.layers`` (a ``torch.nn.ModuleList`` of ``torch.nn.Linear``),
    first layer first, so that weights can be read, permuted and interpolated layer by layer.

    Parameters
    ----------
    in_dim : int
        Input size.
    width : int
        Hidden units per layer.
    depth : int
        Number of hidden layers (0 gives a linear model).
    out_dim : int
        Output size.
    bias : bool, default True
        Whether the linear layers have biases (Nagarajan and Kolter's nets have none).
    activation : str, default "relu"
        A name from :data:`ACTIVATIONS`.

    Raises
    ------
    TypeError, ValueError
        If a size is not an int >= 1 (``depth`` >= 0), ``bias`` is not a bool, ``activation`` is
        not a known name, or the network would hold more than
        :data:`gtlib.models.MAX_PARAMETERS` parameters.

    Notes
    -----
    Initialization is PyTorch's default (Kaiming-uniform with ``a=sqrt(5)``).

    References
    ----------
    He, K., Zhang, X., Ren, S. and Sun, J. (2015). Delving deep into rectifiers: surpassing
    human-level performance on ImageNet classification. ICCV.
    """

    def __init__(
        self,
        in_dim: int,
        width: int,
        depth: int,
        out_dim: int,
        bias: bool = True,
        activation: str = "relu",
    ):
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
            raise ValueError(
                f"MLP(in_dim={in_dim}, width={width}, depth={depth}, out_dim={out_dim}) "
                f"would hold {n_params:.3g} parameters, more than {MAX_PARAMETERS}: "
                "use a smaller width or depth"
            )
        self.layers = nn.ModuleList(
            nn.Linear(a, b, bias=bias) for a, b in zip(sizes[:-1], sizes[1:])
        )

    @property
    def depth(self) -> int:
        """Number of hidden layers."""
        return len(self.layers) - 1

    def _check_input(self, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        if x.ndim != 2 or x.shape[1] != self.layers[0].in_features:
            raise ValueError(
                f"x must have shape (batch, {self.layers[0].in_features}), "
                f"got {tuple(x.shape)}"
            )
        dtype = self.layers[0].weight.dtype
        if x.dtype != dtype:
            raise TypeError(
                f"x must have the network's dtype {dtype}, got {x.dtype} "
                f"(convert with x.to({dtype}) or the network with .to({x.dtype}))"
            )
        check_finite("x", x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The logits ``(batch, out_dim)`` of the inputs ``x`` ``(batch, in_dim)``.

        Parameters
        ----------
        x : torch.Tensor
            Inputs ``(batch, in_dim)``, finite, in the network's dtype.

        Returns
        -------
        torch.Tensor
            The logits, ``(batch, out_dim)``.
        """
        self._check_input(x)
        return self._forward(x)

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` without the input checks (training: the data were checked once)."""
        for layer in self.layers[:-1]:
            x = self.act(layer(x))
        return self.layers[-1](x)

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Post-activation features of every hidden layer, then the logits.

        Parameters
        ----------
        x : torch.Tensor
            Inputs ``(batch, in_dim)``, finite, in the network's dtype.

        Returns
        -------
        list of torch.Tensor
            ``depth`` tensors ``(batch, width)``, then the logits ``(batch, out_dim)``.
        """
        self._check_input(x)
        out = []
        for layer in self.layers[:-1]:
            x = self.act(layer(x))
            out.append(x)
        out.append(self.layers[-1](x))
        return out


def _transposed_layout(w: torch.Tensor) -> torch.Tensor:
    """A copy of the ``(E, out, in)`` tensor ``w`` stored as ``(E, in, out)`` (same shape, values)."""
    return (
        w.transpose(1, 2)
        .clone(memory_format=torch.contiguous_format)
        .transpose(1, 2)
    )


def make_mlp(
    seed: int,
    in_dim: int,
    width: int,
    depth: int,
    out_dim: int,
    bias: bool = True,
    act: str = "relu",
) -> MLP:
    """An :class:`MLP` whose initialization is fixed by ``seed`` alone.

    The global random state is left as it was: the network is drawn inside a forked RNG seeded
    with ``seed``, so member ``i`` of :meth:`gtlib.models.BatchedMLP.init` and the ``i``-th model
    of :func:`gtlib.train.train_sequentially` start from the same weights.

    Parameters
    ----------
    seed : int
        Seed of the initialization (PyTorch's default, Kaiming-uniform with ``a=sqrt(5)``).
    in_dim, width, depth, out_dim : int
        The shape, as for :class:`gtlib.models.MLP`.
    bias : bool, default True
        Whether the linear layers have biases.
    act : str, default "relu"
        A name from :data:`ACTIVATIONS`.

    Returns
    -------
    MLP
        A freshly initialized network on the CPU, in float32.

    Raises
    ------
    TypeError, ValueError
        If ``seed`` is not a valid seed, or the shape or activation is refused by
        :class:`gtlib.models.MLP`.

    References
    ----------
    He, Zhang, Ren and Sun (2015), "Delving Deep into Rectifiers" (the Kaiming initialization).
    """
    seed = check_seed("seed", seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MLP(in_dim, width, depth, out_dim, bias=bias, activation=act)


class BatchedMLP(nn.Module):
    r"""E MLPs of one shape, evaluated together.

    Member ``e`` computes, layer by layer,

    .. math::

        h^{(0)} = x, \qquad
        h^{(l+1)} = m_e \odot \sigma\big(W^{(l)}_e h^{(l)} + b^{(l)}_e\big), \qquad
        f_e(x) = W^{(L)}_e h^{(L)} + b^{(L)}_e,

    with ``m_e`` the member's row of ``hidden_mask`` (all ones without a mask); all E members
    are computed by one batched matrix product per layer.

    Parameters
    ----------
    weights : list of torch.Tensor
        The stacked weight matrices ``(E, out_l, in_l)``, first layer first.
    biases : list of torch.Tensor or None
        The stacked biases ``(E, out_l)``, one per layer; None for networks without biases.
    act : str, default "relu"
        Activation name (see :data:`ACTIVATIONS`).
    hidden_mask : torch.Tensor or None, default None
        Optional 0/1 mask ``(E, width)`` of hidden units (same for every hidden layer).

    Raises
    ------
    TypeError, ValueError
        If the weights are not a list of float ``(E, out, in)`` tensors that chain, the biases do
        not match them, or the mask is not a ``(E, width)`` tensor of 0s and 1s.

    References
    ----------
    The stacking is what ``torch.func.stack_module_state`` with ``torch.func.vmap`` does for any
    module (PyTorch documentation, "Model ensembling").
    """

    def __init__(
        self,
        weights: Sequence[torch.Tensor],
        biases: Sequence[torch.Tensor] | None,
        act: str = "relu",
        hidden_mask: torch.Tensor | None = None,
    ):
        super().__init__()
        if isinstance(weights, (str, torch.Tensor)) or not isinstance(
            weights, (list, tuple)
        ):
            raise TypeError(
                f"weights must be a list of (E, out, in) tensors, got "
                f"{type(weights).__name__}"
            )
        if len(weights) < 1:
            raise ValueError("weights must hold at least one layer")
        for l, w in enumerate(weights):
            Tensor("float", 3).check(f"weights[{l}]", w)
        E = weights[0].shape[0]
        for l, w in enumerate(weights):
            if w.shape[0] != E:
                raise ValueError(
                    f"weights[{l}] must have shape (E, out, in) with E = {E}, got "
                    f"{tuple(w.shape)}"
                )
            if l and w.shape[2] != weights[l - 1].shape[1]:
                raise ValueError(
                    f"weights[{l}] must take {weights[l - 1].shape[1]} inputs (the "
                    f"outputs of weights[{l - 1}]), got shape {tuple(w.shape)}"
                )
        if biases is not None:
            if isinstance(biases, (str, torch.Tensor)) or not isinstance(
                biases, (list, tuple)
            ):
                raise TypeError(
                    f"biases must be a list of (E, out) tensors or None, got "
                    f"{type(biases).__name__}"
                )
            for l, b in enumerate(biases):
                Tensor("float", 2).check(f"biases[{l}]", b)
                if l < len(weights) and tuple(b.shape) != (E, weights[l].shape[1]):
                    raise ValueError(
                        f"biases[{l}] must have shape ({E}, {weights[l].shape[1]}), "
                        f"got {tuple(b.shape)}"
                    )
        if hidden_mask is not None:
            Tensor().check("hidden_mask", hidden_mask)
        # each W_l is (E, out, in) but laid out in memory as (E, in, out): the forward multiplies by
        # W_l^T, which is then contiguous, so autograd returns weight gradients with the weights'
        # own layout and the optimizer's elementwise updates run at memory speed
        self.weights = nn.ParameterList(
            nn.Parameter(_transposed_layout(w.detach())) for w in weights
        )
        self.has_bias = biases is not None
        if biases is not None:
            if len(biases) != len(weights):
                raise ValueError("biases must have one entry per layer")
            self.biases = nn.ParameterList(
                nn.Parameter(b.detach().clone()) for b in biases
            )
        self.act_name = act
        self.act = activation(act)
        if hidden_mask is not None:
            width = weights[0].shape[1]
            if hidden_mask.shape != (E, width):
                raise ValueError(
                    f"hidden_mask must have shape ({E}, {width}), got "
                    f"{tuple(hidden_mask.shape)}"
                )
            if not bool(((hidden_mask == 0) | (hidden_mask == 1)).all()):
                raise ValueError("hidden_mask must hold only 0s and 1s")
            hidden_mask = hidden_mask.to(weights[0].dtype)
        self.register_buffer("hidden_mask", hidden_mask)

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_models(
        cls, models: Sequence[MLP], hidden_mask: torch.Tensor | None = None
    ) -> "BatchedMLP":
        """Stack the weights of identically shaped :class:`gtlib.models.MLP` networks.

        Parameters
        ----------
        models : list of MLP
            At least one network; all of the same shape and activation.
        hidden_mask : torch.Tensor or None, default None
            Optional 0/1 mask ``(E, width)`` of hidden units.

        Returns
        -------
        BatchedMLP
            A stack whose member ``i`` computes what ``models[i]`` computes (a copy of its weights).

        Raises
        ------
        TypeError, ValueError
            If ``models`` is not a non-empty list of :class:`gtlib.models.MLP` of one shape and
            activation, or the mask does not fit them.
        """
        if isinstance(models, (str, MLP)) or not isinstance(models, (list, tuple)):
            raise TypeError(
                f"models must be a list of MLPs, got {type(models).__name__}"
            )
        if len(models) == 0:
            raise ValueError("models must not be empty")
        for i, m in enumerate(models):
            if not isinstance(m, MLP):
                raise TypeError(
                    f"models[{i}] must be a gtlib MLP, got {type(m).__name__}"
                )
            shapes = [tuple(p.shape) for p in m.parameters()]
            if i == 0:
                first_shapes = shapes
            elif shapes != first_shapes or m.act_name != models[0].act_name:
                raise ValueError(
                    f"models[{i}] must have the shape and activation of models[0] "
                    f"({first_shapes}, {models[0].act_name}), got {shapes}, "
                    f"{m.act_name}"
                )
        first = models[0]
        ws = [
            torch.stack([m.layers[l].weight for m in models])
            for l in range(len(first.layers))
        ]
        bs = None
        if first.layers[0].bias is not None:
            bs = [
                torch.stack([m.layers[l].bias for m in models])
                for l in range(len(first.layers))
            ]
        return cls(ws, bs, act=first.act_name, hidden_mask=hidden_mask)

    @classmethod
    def init(
        cls,
        seeds: Sequence[int],
        in_dim: int,
        width: int,
        depth: int,
        out_dim: int,
        bias: bool = True,
        act: str = "relu",
        hidden_mask: torch.Tensor | None = None,
        device: str | torch.device = "cpu",
    ) -> "BatchedMLP":
        """E freshly initialized MLPs, member ``i`` initialized as ``make_mlp(seeds[i], ...)``.

        Parameters
        ----------
        seeds : sequence of int
            One seed per member (E = ``len(seeds)``).
        in_dim, width, depth, out_dim, bias, act
            The members' shape, as for :func:`gtlib.models.make_mlp`.
        hidden_mask : torch.Tensor or None, default None
            Optional 0/1 mask ``(E, width)`` of hidden units.
        device : str or torch.device, default "cpu"
            Where the stack lives.

        Returns
        -------
        BatchedMLP
            The stack, on ``device``.

        Raises
        ------
        TypeError, ValueError
            If ``seeds`` are not valid seeds, ``device`` is not a device, or the shape,
            activation or mask is refused.
        """
        seeds = check_seeds("seeds", seeds)
        Device().check("device", device)
        models = [
            make_mlp(s, in_dim, width, depth, out_dim, bias, act) for s in seeds
        ]
        return cls.from_models(models, hidden_mask=hidden_mask).to(device)

    @property
    def size(self) -> int:
        """Number of members E."""
        return int(self.weights[0].shape[0])

    def member(self, i: int) -> MLP:
        """Member ``i`` as a stand-alone :class:`gtlib.models.MLP` (a copy).

        The hidden mask, if any, is baked into the copy's weights: a masked unit gets no input and
        the next layer ignores it, so the copy computes exactly what the member computes.

        Parameters
        ----------
        i : int
            The member, in ``[0, E)``.

        Returns
        -------
        MLP
            A network with the member's weights, on the stack's device and dtype.

        Raises
        ------
        TypeError, ValueError
            If ``i`` is not an int in ``[0, E)``.
        """
        i = check_int("i", i, minimum=0)
        if i >= self.size:
            raise ValueError(f"i must lie in [0, {self.size}), got {i}")
        w0 = self.weights[0]
        depth = len(self.weights) - 1
        m = MLP(
            w0.shape[2],
            w0.shape[1] if depth else 1,
            depth,
            self.weights[-1].shape[1],
            bias=self.has_bias,
            activation=self.act_name,
        ).to(w0.device, w0.dtype)
        with torch.no_grad():
            for l, layer in enumerate(m.layers):
                w = self.weights[l][i]
                if self.hidden_mask is not None:  # bake the mask into the weights:
                    if l < depth:  # a masked unit gets no input...
                        w = w * self.hidden_mask[i][:, None]
                    if (
                        l > 0
                    ):  # ...and the next layer ignores it (act(0) need not be 0)
                        w = w * self.hidden_mask[i][None, :]
                layer.weight.copy_(w)
                if self.has_bias:
                    b = self.biases[l][i]
                    if self.hidden_mask is not None and l < depth:
                        b = b * self.hidden_mask[i]
                    layer.bias.copy_(b)
        return m

    # -- evaluation -----------------------------------------------------------------------------
    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Hidden features of every layer ``(E, n, width)``, then the logits ``(E, n, C)``.

        Parameters
        ----------
        x : torch.Tensor
            Inputs ``(n, d)`` shared by all members, or one batch ``(E, n, d)`` per member; the
            weights' dtype, finite.

        Returns
        -------
        list of torch.Tensor
            The post-activation (and masked) features of every hidden layer, then the logits.

        Raises
        ------
        TypeError, ValueError
            If ``x`` is not a finite tensor of the weights' dtype and of shape ``(n, d)`` or
            ``(E, n, d)``.
        """
        d = self.weights[0].shape[2]
        if isinstance(x, torch.Tensor) and x.ndim in (2, 3):
            if x.dtype != self.weights[0].dtype:
                raise TypeError(
                    f"x must have the weights' dtype {self.weights[0].dtype}, got "
                    f"{x.dtype}"
                )
            check_finite("x", x)
        if (
            not isinstance(x, torch.Tensor)
            or x.shape[-1:] != (d,)
            or x.ndim not in (2, 3)
            or (x.ndim == 3 and x.shape[0] != self.size)
        ):
            raise ValueError(
                f"x must have shape (n, {d}) or ({self.size}, n, {d}), got "
                f"{tuple(getattr(x, 'shape', ()))}"
            )
        return self._features(x)

    def _features(self, x: torch.Tensor, keep: bool = True) -> list[torch.Tensor]:
        """:meth:`features` without the checks (training: the data were checked once); with
        ``keep=False`` only the logits."""
        weights, biases = self._stacks()
        h = x if x.ndim == 3 else x.unsqueeze(0).expand(len(weights[0]), -1, -1)
        out = []
        last = len(weights) - 1
        for l, w in enumerate(weights):
            if biases is not None:  # one fused kernel: b + h W^T
                h = torch.baddbmm(biases[l].unsqueeze(1), h, w.transpose(1, 2))
            else:
                h = torch.matmul(h, w.transpose(1, 2))
            if l < last:
                h = self.act(h)
                if self.hidden_mask is not None:
                    h = h * self.hidden_mask.unsqueeze(1)
            if keep or l == last:
                out.append(h)
        return out

    def _stacks(self) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        """The stacked weights and biases (None without biases) as plain lists: indexing a
        ``ParameterList`` goes through ``nn.Module``'s attribute lookup, a cost paid at every
        training step that is as large as the small layers' products."""
        weights = list(self.weights._parameters.values())
        biases = list(self.biases._parameters.values()) if self.has_bias else None
        return weights, biases

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        """The logits ``(E, n, C)``, unchecked (the training loop's forward pass)."""
        return self._features(x, keep=False)[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The members' logits ``(E, n, C)``.

        Parameters
        ----------
        x : torch.Tensor
            Inputs ``(n, d)`` shared by all members, or one batch ``(E, n, d)`` per member.

        Returns
        -------
        torch.Tensor
            The logits, ``(E, n, C)``.
        """
        return self.features(x)[-1]
