"""Attention pooling as kernel regression (Nadaraya-Watson).

The oldest attention mechanism in this book: to predict y at a query x, average
the training targets y_i, weighting each by how close its key x_i is to x.
"""

import torch

from .._checks import (
    all_finite,
    require_finite_number,
    require_float,
    require_int,
    require_positive,
    require_same_dtype,
    require_same_size,
)
from .._memory import require_matrix_fits
from .._random import seeded_generator
from .masking import masked_softmax


def gaussian_scores(
    query_x: torch.Tensor, key_x: torch.Tensor, bandwidth: float = 1.0
) -> torch.Tensor:
    """Gaussian-kernel scores ``-(x - x_i)^2 / (2 sigma^2)``.

    query_x: (n_q,), key_x: (n_k,). Returns scores: (n_q, n_k); a score
    below the dtype's range is -inf (a weight of exactly 0).
    """
    require_float("query_x", query_x)
    require_float("key_x", key_x)
    require_positive("bandwidth", bandwidth)
    if query_x.dim() != 1 or key_x.dim() != 1:
        raise ValueError(
            f"query_x and key_x must be 1-D, got shapes {tuple(query_x.shape)}"
            f" and {tuple(key_x.shape)}"
        )
    require_same_dtype(query_x=query_x, key_x=key_x)
    require_matrix_fits(
        "the score matrix", (query_x.shape[0], key_x.shape[0]), query_x.dtype
    )
    differences = query_x.unsqueeze(1) - key_x.unsqueeze(0)
    sigma = float(bandwidth)
    if 1e-150 < sigma < 1e150:
        return -differences.pow(2) / (2 * sigma**2)
    # sigma**2 would overflow or underflow: divide by sigma first, in float64
    scaled = differences.double() / sigma
    return (-scaled.pow(2) / 2).to(differences.dtype)


def nadaraya_watson(
    query_x: torch.Tensor,
    key_x: torch.Tensor,
    values: torch.Tensor,
    bandwidth: float = 1.0,
):
    """Nadaraya-Watson kernel regression with a Gaussian kernel.

    query_x: (n_q,) points to predict at.
    key_x:   (n_k,) training inputs (the keys).
    values:  (n_k,) or (n_k, d_v) training targets (the values).
    bandwidth: the kernel width sigma > 0.
    Returns (predictions, weights): predictions (n_q,) or (n_q, d_v), and
    weights (n_q, n_k) = softmax over keys of ``-(x - x_i)^2 / (2 sigma^2)``.
    """
    require_float("values", values)
    scores = gaussian_scores(query_x, key_x, bandwidth)
    if values.dim() not in (1, 2):
        raise ValueError(
            "values must have shape (n_k,) or (n_k, d_v), got "
            f"{tuple(values.shape)}"
        )
    require_same_size(
        "number of keys and values",
        "key_x",
        key_x.shape[0],
        "values",
        values.shape[0],
    )
    require_same_dtype(query_x=query_x, key_x=key_x, values=values)
    # A tiny bandwidth or a far query makes (x - x_i)^2 / (2 sigma^2) overflow
    # (inf - inf = NaN in the softmax), or so large that its rounding error
    # (|score| * eps) blurs the differences the softmax depends on. Softmax
    # ignores a shift per row, so then score the distance beyond the nearest
    # key instead, in float64; where even that overflows, the weight is exactly
    # 0.
    blurred = scores.numel() and not bool(
        scores.abs().amax() * torch.finfo(scores.dtype).eps < 1e-2
    )
    if blurred and all_finite(query_x) and all_finite(key_x):
        scores = _relative_gaussian_scores(query_x, key_x, bandwidth).to(
            scores.dtype
        )
    weights = masked_softmax(scores, dim=-1)
    return weights @ values, weights


def _relative_gaussian_scores(
    query_x: torch.Tensor, key_x: torch.Tensor, bandwidth: float
) -> torch.Tensor:
    """-(d_i^2 - d_m^2) / (2 sigma^2) in float64, d_i = |x - x_i|, m the
    nearest key: the scores minus each row's maximum.

    d_i^2 - d_m^2 = (x_i - x_m)(x_i + x_m - 2x): a product of a key difference
    and a sum, so no square of a large distance overflows and a far query still
    tells its keys apart. The nearest key (argmin of x_i (x_i - 2x) = d_i^2 -
    x^2) scores exactly 0; a score below float64's range is -inf (weight 0).
    """
    query, key = query_x.double().unsqueeze(1), key_x.double().unsqueeze(0)
    nearest = key.expand(query.shape[0], -1).gather(
        1, (key * (key - 2 * query)).argmin(dim=1, keepdim=True)
    )
    gap = ((key - nearest) * (key + nearest - 2 * query)).clamp_min(0.0)
    variance2 = 2.0 * float(bandwidth) ** 2
    scale = 1.0 / variance2 if variance2 > 0 else float("inf")
    return torch.where(
        gap > 0, -gap * scale, torch.zeros((), dtype=torch.float64)
    )


def regression_data(
    n_train: int = 50, n_test: int = 100, noise: float = 0.5, seed: int = 0
):
    """The chapter's seeded 1-D regression task: y = 2 sin(x) + x^0.8 + noise
    on [0, 5).

    Returns (x_train (n_train,), y_train (n_train,), x_test (n_test,), y_true
    (n_test,)), with x_train sorted, drawn uniformly, and x_test evenly spaced
    on [0, 5).
    """
    require_int("n_train", n_train)
    require_int("n_test", n_test)
    require_finite_number("noise", noise, low=0.0, high=1e30)
    require_int("seed", seed, minimum=0)
    require_matrix_fits("the data", (max(n_train, n_test),), torch.float32)
    generator = seeded_generator(seed)
    x_train, _ = torch.sort(torch.rand(n_train, generator=generator) * 5)
    y_train = regression_target(x_train) + noise * torch.randn(
        n_train, generator=generator
    )
    x_test = torch.arange(n_test, dtype=torch.float32) * (5 / n_test)
    return x_train, y_train, x_test, regression_target(x_test)


def regression_target(x: torch.Tensor) -> torch.Tensor:
    """The noise-free function f(x) = 2 sin(x) + x^0.8 the chapter learns."""
    require_float("x", x)
    # the two terms and their sum: three tensors of x's size at once
    require_matrix_fits(
        "f(x) and its two terms", (3, *x.shape), x.dtype, "use fewer x, or"
    )
    return 2 * torch.sin(x) + x.pow(0.8)


def mean_squared_error(
    predictions: torch.Tensor, targets: torch.Tensor
) -> float:
    """Mean squared error as a Python float."""
    require_float("predictions", predictions)
    require_float("targets", targets)
    if predictions.shape != targets.shape or predictions.numel() == 0:
        raise ValueError(
            "predictions and targets must have one non-empty shape, got "
            f"{tuple(predictions.shape)} and {tuple(targets.shape)}"
        )
    return float(((predictions - targets) ** 2).mean())
