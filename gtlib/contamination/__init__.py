"""Feature contamination: networks learn label-uncorrelated features and fail to generalize.

This module re-runs the toy experiments of Zhang, Zhao, Chen, Jiang and Chen, *Feature
Contamination: Neural Networks Learn Uncorrelated Features and Fail to Generalize* (ICML 2024,
arXiv:2406.03345), in the setting of the authors' public code, plus two extensions that the book
adds (a representation-distillation experiment at toy scale and an MNIST-1D variant).

The data model (Section 4.1 of the paper). An input ``x`` in R^d is the sum of a *core* part and a
*background* part living in orthogonal subspaces,

    x = P_c z_c + P_b z_b,      P = [P_c P_b] with P^T P = I,

where ``z_c`` in R^{k_c} carries the label and ``z_b`` in R^{k_b} does not (it is drawn from the same
distribution for both classes). Two configurations:

* ``"theory"`` (matches the theorems): ``z_c ~ y * U[0,1]^{k_c}`` with ``y`` in {-1, +1};
* ``"default"`` (the authors' default script): ``z_c`` on the unit sphere for ``y = +1`` and on the
  radius-2 sphere for ``y = -1``, so no linear classifier separates the classes.

In both, ``z_b ~ U[0,1]^{k_b}`` during training (``centred=True``: ``U[-1/2, 1/2]^{k_b}``, the
control that removes the background's mean). The out-of-distribution (OOD) test set moves the
background: :func:`shift_background` subtracts ``magnitude`` from every background coordinate, so
``magnitude = 1`` maps ``U[0,1]`` onto ``U[-1,0]``, the paper's ``-U[0,1]``, while leaving the core
coordinates untouched.

The model is a two-layer network ``f(x) = sum_j a_j act(w_j . x + b_j) + c``. In the theory
configuration the output layer is frozen at ``a_j = +1/h`` on the first half of the ``h`` units and
``-1/h`` on the second half, with no output bias ``c`` (the authors' script keeps a random, frozen
``c``: a constant shift of ``f`` that we drop), the first layer has biases ``b_j`` as in that script
(``TheoryConfig.bias``), and training uses the hinge loss. The quantity the paper tracks
(Figure 3) is the mean norm of the projections of the first-layer weights ``w_j`` onto the core
and the background subspaces, :func:`projection_norms`; :func:`mean_direction_components` splits
the background part into its component along the background mean direction, the only part a
shift of every background coordinate sees, and the rest. :func:`bias_equivalence` measures the
identity behind the growth along that direction: the background mean is a second bias input,
so under SGD a neuron's weight along it moves ``sqrt(k_b)/2`` times as much as its bias (a
derivation of the book, not a statement of the paper).

Every experiment trains several configurations *at once*: :class:`TwoLayerNets` stacks E networks
(one batched matmul per layer), each member with its own activation, loss and optimizer, and
:func:`train_two_layer` updates them with full-batch steps of the core's training loop
(:func:`gtlib.engine.fit`).

The package follows those sections: ``common`` (shared names and argument checks),
``data`` (the data model and the toy settings), ``networks``, ``metrics`` (losses and metrics),
``training``, and one module per experiment: ``theory``, ``default``, ``distillation`` and
``mnist1d``; ``claims`` is the chapter's claims table.
"""

# Every public name of the submodules stays reachable as ``gtlib.contamination.<name>``: the API in
# ``__all__``, the results and networks its functions return, and the building blocks they call.
from .claims import CLAIMS
from .common import BINARY_LOSSES, KINDS, OPTIMIZERS
from .data import (
    Embedding,
    label_correlations,
    off_subspace_direction,
    orthogonal_shifts,
    random_embedding,
    sample_core,
    sample_toy,
    shift_background,
    ToyConfig,
    ToyData,
)
from .networks import init_two_layer, NetSpec, TwoLayerNets
from .metrics import (
    activation_asymmetry,
    bias_equivalence,
    binary_accuracy,
    mean_direction_components,
    projection_norms,
    relative_error,
    signed_asymmetry,
)
from .training import linear_probe, shift_sweep, ToyHistory, train_two_layer
from .theory import run_theory, theory_specs, TheoryConfig, ToyResult, VARIANTS
from .default import ACT_LABELS, DefaultConfig, run_default
from .distillation import DistillConfig, DistillResult, run_distillation
from .mnist1d import append_background, Mnist1dConfig, run_mnist1d, shift_last

__all__ = [
    # the chapter's claims table
    "CLAIMS",
    # configs and results
    "DefaultConfig",
    "DistillConfig",
    "Mnist1dConfig",
    "TheoryConfig",
    # functions
    "activation_asymmetry",
    "bias_equivalence",
    "binary_accuracy",
    "init_two_layer",
    "label_correlations",
    "mean_direction_components",
    "off_subspace_direction",
    "orthogonal_shifts",
    "run_default",
    "run_distillation",
    "run_mnist1d",
    "run_theory",
    "shift_background",
    "shift_sweep",
    "signed_asymmetry",
    "theory_specs",
    "train_two_layer",
]
