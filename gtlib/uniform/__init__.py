"""The death of uniform convergence: random labels, norm bounds that grow with n, and S'.

This package backs the chapter ``book/uniform-convergence.ipynb``, one submodule per section:

1. **Random and corrupted labels** (``randomization``; Zhang, Bengio, Hardt, Recht and Vinyals,
   ICLR 2017, Figure 1): the same network and SGD that generalize on true labels memorize random
   ones. :class:`CorruptionConfig`, :func:`corruption_experiment`, :func:`cnn_randomization` and
   its capacity null :func:`linear_randomization`.
2. **Norms and norm-based bounds** (``norms``): spectral norms, (2,1)-norms, distance from
   initialization (Nagarajan and Kolter 2017), the spectrally normalized margin bound of Bartlett,
   Foster and Telgarsky (NeurIPS 2017, Theorem 1.1) and the PAC-Bayesian bound of Neyshabur,
   Bhojanapalli and Srebro (ICLR 2018, Theorem 1), each up to the constants and log factors that
   the papers leave in O-notation. :func:`spectral_norm`, :func:`norm_21`,
   :func:`network_measures`.
3. **Power-law fits** (``power_law``) with a standard error: :func:`power_law_fit`.
4. **Training to a fixed margin as n grows** (``margin``; Nagarajan and Kolter, NeurIPS 2019,
   Figure 1): :func:`train_on_subsets` trains one network per training-set size in a single
   batched loop, member ``i`` on the first ``sizes[i]`` points, each with its own stop rule.
   :class:`MarginSweepConfig`, :func:`margin_sweep`, and the margin a network actually reached,
   :func:`realized_margin`.
5. **The overparameterized linear construction** (``linear``; Nagarajan and Kolter 2019, Section
   3.1) with its set S' of negated noise: :func:`linear_data`, :func:`one_step_gd`,
   :func:`linear_sprime`, :func:`linear_errors`, :func:`linear_sweep`.
6. **Two concentric hyperspheres** (``spheres``; Nagarajan and Kolter 2019, Section 3.2 and
   Figure 2): the data, the set S' (each training point projected onto the other sphere, label
   flipped), the sweep over n and the 2-D decision-boundary slices. :func:`sphere_data`,
   :func:`sphere_sprime`, :class:`SpheresConfig`, :func:`spheres_sweep`, :func:`boundary_slice`.

``common`` holds the input checks the sections share; ``claims`` is the chapter's claims table.
"""

# Every public name of the submodules stays reachable as ``gtlib.uniform.<name>``: the API in
# ``__all__``, the results and networks its functions return, and the building blocks they call.
from .claims import CLAIMS
from .randomization import (
    BatchedCNN1d,
    CNNRandomizationConfig,
    CNNRandomizationResult,
    CorruptionConfig,
    CorruptionResult,
    cnn_randomization,
    corruption_experiment,
    corruption_nn_test_error,
    linear_randomization,
)
from .norms import (
    NetworkMeasures,
    bartlett_bound,
    distance_from_init,
    network_measures,
    neyshabur_bound,
    norm_21,
    spectral_norm,
)
from .power_law import PowerLawFit, nearest_neighbour_predict, power_law_fit
from .margin import (
    MarginSweepConfig,
    MarginSweepResult,
    SubsetTraining,
    margin_sweep,
    realized_margin,
    train_on_subsets,
)
from .linear import (
    LinearConstruction,
    LinearErrors,
    LinearNNErrors,
    linear_data,
    linear_errors,
    linear_nn_errors,
    linear_predict,
    linear_sprime,
    linear_sweep,
    one_step_gd,
)
from .spheres import (
    SpheresConfig,
    SpheresResult,
    boundary_slice,
    bulge_width,
    cap_fraction,
    log_ticks,
    plot_slice,
    slice_points,
    sphere_data,
    sphere_sprime,
    spheres_sweep,
)

__all__ = [
    # the chapter's claims table
    "CLAIMS",
    # configs and results
    "CNNRandomizationConfig",
    "CorruptionConfig",
    "LinearConstruction",
    "MarginSweepConfig",
    "SpheresConfig",
    # functions
    "bartlett_bound",
    "boundary_slice",
    "bulge_width",
    "cap_fraction",
    "cnn_randomization",
    "corruption_experiment",
    "corruption_nn_test_error",
    "distance_from_init",
    "linear_errors",
    "linear_nn_errors",
    "linear_randomization",
    "linear_sweep",
    "log_ticks",
    "margin_sweep",
    "plot_slice",
    "realized_margin",
    "slice_points",
    "spheres_sweep",
]
