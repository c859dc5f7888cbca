"""Soft inductive biases: the tools of Wilson (2025), "Deep Learning is Not So Mysterious or Different".

Wilson (ICML 2025, arXiv 2503.02113) argues that benign overfitting, double descent and the success
of overparameterized models are neither mysterious nor special to deep learning. They appear in
simple models, and long-standing tools explain them: a *soft inductive bias* (a flexible hypothesis
space with a preference for simple solutions), the marginal likelihood, effective dimensionality
(Maddox et al. 2020) and countable-hypothesis / compression bounds (Lotfi et al. 2022).

This package holds one submodule per section, in the order of the chapter:

1. **Order-regularized polynomials** (``polynomial``): a degree-150 Legendre expansion with the
   penalty ``sum_j gamma**j * w_j**2``, fitted in closed form; its marginal likelihood sets the
   noise level and the prior scale.
2. **Gaussian-process label regression** (``gp``) with its log marginal likelihood, under label
   corruption (Wilson's Figure 1(d, e), after Zhang et al. 2017).
3. **Random-feature regression** (``random_features``) with minimum-norm least squares, and the
   effective dimensionality ``N_eff = sum_i lambda_i / (lambda_i + alpha)`` of its Hessian
   (Maddox et al. 2020).
4. **MLP width sweep** (``width_sweep``) on MNIST-1D with label noise (deep double descent,
   Nakkiran et al. 2020), batched over widths with :class:`gtlib.models.BatchedMLP`'s
   ``hidden_mask``.
5. **Hessian spectra by Lanczos** (``hessian``): Hessian-vector products from ``torch.func`` fed
   to :func:`scipy.sparse.linalg.eigsh`, with a check that the computed top of the spectrum covers
   every eigenvalue that matters for ``alpha``.
6. **Compression bounds** (``compression``): training in a random subspace (Li et al. 2018),
   quantization, a real adaptive arithmetic coder, prefix-free integer codes, and the
   countable-hypothesis bound ``R(h) <= R_hat(h) + sqrt((K(h) ln 2 + ln(1/delta)) / (2n))``
   (Wilson's Eq. 1; Lotfi et al. 2022), next to a parameter-counting bound.

``common`` holds the input checks the sections share; ``claims`` is the chapter's claims table.
"""

# Every public name of the submodules stays reachable as ``gtlib.soft.<name>``: the API in
# ``__all__``, the results and networks its functions return, and the building blocks they call.
from .polynomial import (
    InterpolantRisk,
    PolyConfig,
    PolyDataset,
    PolyFit,
    PolyResult,
    TARGETS,
    TaxonomyResult,
    complex_target,
    evidence_decomposition,
    fit_polynomial,
    fit_soft_polynomial,
    legendre_features,
    order_penalty,
    overfitting_taxonomy,
    poly_log_evidence,
    predict_polynomial,
    run_polynomial,
    simple_target,
)
from .gp import (
    GPConfig,
    GPCorruptionResult,
    gp_label_regression,
    median_lengthscale,
    rbf_kernel,
    run_gp_corruption,
)
from .random_features import (
    RFConfig,
    RandomFeaturesResult,
    double_descent_summary,
    effective_dimensionality,
    min_norm_lstsq,
    poorly_determined,
    relu_features,
    rf_data,
    rf_spectrum,
    rf_target,
    ridge_path,
    run_random_features,
)
from .width_sweep import (
    MLPSweepConfig,
    MLPSweepResult,
    interpolation_threshold,
    masked_ensemble,
    member_at_width,
    run_mlp_sweep,
    split_peak_test,
    width_peak_summary,
)
from .hessian import (
    dense_hessian,
    effective_parameters,
    hessian_matvec,
    lanczos_top_eigs,
    tail_trace,
)
from .claims import CLAIMS
from .compression import (
    CompressionConfig,
    CompressionResult,
    ConvNet1D,
    SubspaceNet,
    arithmetic_decode,
    arithmetic_encode,
    bits_at_fit,
    compress_and_bound,
    countable_bound,
    counting_bound,
    decode_quantized,
    elias_gamma,
    elias_gamma_decode,
    encode_quantized,
    kl_bernoulli,
    kl_inverse,
    pac_bayes_kl_bound,
    quantize,
    run_compression,
    train_subspace,
    tune_centres,
)

__all__ = [
    # the chapter's claims table
    "CLAIMS",
    # configs and results
    "CompressionConfig",
    "GPConfig",
    "MLPSweepConfig",
    "PolyConfig",
    "RFConfig",
    "TARGETS",
    # functions
    "bits_at_fit",
    "countable_bound",
    "counting_bound",
    "double_descent_summary",
    "effective_dimensionality",
    "effective_parameters",
    "evidence_decomposition",
    "fit_polynomial",
    "interpolation_threshold",
    "kl_inverse",
    "legendre_features",
    "order_penalty",
    "overfitting_taxonomy",
    "pac_bayes_kl_bound",
    "poly_log_evidence",
    "predict_polynomial",
    "rf_spectrum",
    "run_compression",
    "run_gp_corruption",
    "run_mlp_sweep",
    "run_polynomial",
    "run_random_features",
    "split_peak_test",
]
