"""How sure a count of successes out of n trials makes us of the rate.

Chapter 10 compares two trained models by how many of 18,000 held-out dates
each gets wrong: a handful of misses, or none. A count that small says little
about the rate on its own, so the chapter prints the exact (Clopper-Pearson)
interval of the miss rate and asks whether two counts differ more than chance
would let them.
"""

import math

import torch

from .._checks import require_int, require_probability

# counts of held-out items, not of tokens in a corpus: the sums below hold up
# to n terms
MAX_TRIALS = 10**5


def _binomial_cdf(k: int, n: int):
    """p -> P(X <= k) for X ~ Binomial(n, p), 0 < p < 1: the log binomial
    coefficients computed once, the terms summed in float64."""
    i = torch.arange(k + 1, dtype=torch.float64)
    log_comb = (
        math.lgamma(n + 1) - torch.lgamma(i + 1) - torch.lgamma(n - i + 1)
    )

    def cdf(p: float) -> float:
        terms = log_comb + i * math.log(p) + (n - i) * math.log1p(-p)
        return terms.exp().sum().item()

    return cdf


def _solve(increasing, target: float) -> float:
    """The p in (0, 1) where the monotone ``increasing(p)`` reaches
    ``target``, by bisection (to within 2**-64)."""
    low, high = 0.0, 1.0
    for _ in range(64):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if increasing(middle) < target:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple:
    """The exact (Clopper-Pearson) two-sided interval ``(low, high)`` of a
    binomial rate from ``k`` events in ``n`` trials, at confidence ``level``.

    ``low`` is the rate at which ``k`` or more events have probability
    ``(1 - level) / 2`` (0 when ``k == 0``), ``high`` the rate at which ``k``
    or fewer have that probability (1 when ``k == n``). The interval covers
    the true rate with probability at least ``level`` for every rate.
    """
    require_int("n", n)
    require_int("k", k, minimum=0)
    if n > MAX_TRIALS:
        raise ValueError(f"n must be at most {MAX_TRIALS:,}, got {n}")
    if k > n:
        raise ValueError(f"k must be at most n = {n}, got {k}")
    level = require_probability("level", level)
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1: {level}")
    tail = (1 - level) / 2
    low = 0.0
    if k > 0:  # P(X >= k) rises with p
        below = _binomial_cdf(k - 1, n)
        low = _solve(lambda p: 1 - below(p), tail)
    high = 1.0
    if k < n:  # P(X <= k) falls with p
        at_most = _binomial_cdf(k, n)
        high = _solve(lambda p: -at_most(p), -tail)
    return low, high


def equal_rates_p_value(k_a: int, k_b: int) -> float:
    """Two-sided exact p-value that two counts of events, ``k_a`` and
    ``k_b``, from the same number of trials come from one rate.

    Given the total ``k_a + k_b``, each event falls in either sample with
    probability 1/2 if the rates are equal (the conditional binomial test,
    exact for rare events); the p-value is twice the probability of a split
    at least as uneven, at most 1. With no events it is 1.
    """
    require_int("k_a", k_a, minimum=0)
    require_int("k_b", k_b, minimum=0)
    total = k_a + k_b
    if total > MAX_TRIALS:
        raise ValueError(
            f"k_a + k_b must be at most {MAX_TRIALS:,}, got {total}"
        )
    if total == 0:
        return 1.0
    return min(1.0, 2 * _binomial_cdf(min(k_a, k_b), total)(0.5))
