"""Mode connectivity: interpolation paths, barriers, permutation alignment, spawning, LLFC and CTL.

The chapter *Mode connectivity* re-runs, on MNIST-1D MLPs, the results of

* Frankle, Dziugaite, Roy and Carbin, "Linear mode connectivity and the lottery ticket hypothesis"
  (ICML 2020): the *instability* of a pair, the largest test error along the straight line minus
  the mean of the endpoints' errors (:func:`barrier_mean`), and *spawning* (their Section 3:
  train for k steps, copy, continue the copies with different SGD noise);
* Entezari et al. (ICLR 2022) and Ainsworth, Hayase and Srinivasa, "Git Re-Basin" (ICLR 2023):
  hidden units can be permuted without changing the function; the loss barrier above the chord
  between the endpoints (Entezari et al.'s definition, :func:`barrier`); *weight matching* (Git
  Re-Basin, Section 3.2 and Algorithm 1: one linear assignment problem per layer, coordinate
  descent over the layers) and activation matching align two independently trained networks;
* Jordan et al., "REPAIR" (ICLR 2023): renormalizing the interpolated network's units
  (:func:`repair_stack`); Garipov et al. (NeurIPS 2018): low-loss quadratic Bezier curves between
  unaligned networks (:func:`fit_bezier`);
* Zhou et al., "Layerwise Linear Feature Connectivity" (NeurIPS 2023): when two networks are
  linearly connected, the features of the interpolated network equal (up to scale) the interpolated
  features at every layer (their LLFC definition), which follows from *weak additivity* of ReLU
  (:func:`weak_additivity`) and *commutativity* ``W_A H_A + W_B H_B = W_A H_B + W_B H_A``; and
  LLFC implies linear connectivity (:func:`logit_interpolation`). The paper's numbering of these
  statements is not checked here;
* Zhou, Chen, Chen, Zhang and Yan, "Cross-Task Linearity" (ICML 2024): models fine-tuned from one
  pretrained model on different tasks are layerwise linear in the same sense,
  which explains weight averaging (model soups) and task arithmetic (Ilharco et al., ICLR 2023).

The module reads top to bottom: (1) stacking and training networks (compositions of
:mod:`gtlib.engine`), (2) interpolation and barriers, (3) permutations and matching, (4)
feature-level metrics (LLFC, weak additivity, commutativity), (4b) REPAIR and Bezier curves, (5)
fine-tuning, averaging and task vectors, (6) the chapter's experiments, each a function of a
config dataclass.

Conventions. A network is a :class:`gtlib.models.MLP` (for one net) or a
:class:`gtlib.models.BatchedMLP` (for a stack). ``theta(alpha) = (1 - alpha) theta_A + alpha
theta_B``, so ``alpha = 0`` is network A. A permutation of a hidden layer is an index array ``p``:
unit ``i`` of the permuted network is unit ``p[i]`` of the original.

The package follows those sections: ``common`` (the shared argument checks),
``training`` (1), ``paths`` (2), ``permutations`` (3), ``features`` (4), ``repair`` (4b),
``finetuning`` (5) and ``experiments`` (6); ``claims`` is the chapter's claims table.
"""

# Every public name of the submodules stays reachable as ``gtlib.connectivity.<name>``: the API in
# ``__all__``, the results and networks its functions return, and the building blocks they call.
from .claims import CLAIMS
from .common import EXPERIMENT_SEED, GRID, INPUTS, LABELS
from .training import fit, from_params, members, params, Recipe, stack, train_nets
from .paths import (
    barrier,
    barrier_mean,
    evaluate_path,
    evaluate_stack,
    lerp,
    Path,
    path_stack,
)
from .permutations import (
    activation_matching,
    perm_recovery,
    permute,
    random_perms,
    weight_matching,
)
from .features import (
    commutativity_bound_ratio,
    commutativity_residual,
    cosine_dissimilarity,
    endpoint_dissimilarity,
    llfc_dissimilarity,
    logit_interpolation,
    preactivations,
    weak_additivity,
)
from .repair import (
    bezier_stack,
    evaluate_bezier,
    fit_bezier,
    REPAIR_MODES,
    repair_path,
    repair_stack,
)
from .finetuning import (
    accuracy,
    ADDITION_MODES,
    addition_gains,
    apply_task_vectors,
    average,
    task_vector,
    weight_distance,
    with_head,
)
from .experiments import (
    add_noise,
    align,
    Alignment,
    barrier_vs_epoch,
    ConnectivityConfig,
    cross_task_experiment,
    CrossTask,
    depth_sweep,
    disagreement_ratio,
    llfc_profile,
    perturb,
    planted_permutation_check,
    pretraining_sweep,
    PretrainingSweep,
    spawn_experiment,
    Spawning,
    SweepPoint,
    task_labels,
    train_pairs,
)

__all__ = [
    # the chapter's claims table
    "CLAIMS",
    # configs and results
    "ConnectivityConfig",
    # functions
    "accuracy",
    "activation_matching",
    "addition_gains",
    "align",
    "apply_task_vectors",
    "barrier",
    "barrier_vs_epoch",
    "commutativity_bound_ratio",
    "commutativity_residual",
    "cross_task_experiment",
    "depth_sweep",
    "endpoint_dissimilarity",
    "evaluate_bezier",
    "evaluate_path",
    "fit_bezier",
    "llfc_dissimilarity",
    "llfc_profile",
    "logit_interpolation",
    "permute",
    "perturb",
    "planted_permutation_check",
    "pretraining_sweep",
    "random_perms",
    "repair_path",
    "spawn_experiment",
    "task_labels",
    "task_vector",
    "train_nets",
    "train_pairs",
    "weak_additivity",
    "weight_distance",
    "weight_matching",
]
