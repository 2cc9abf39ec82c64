"""Chapter 3's blend task: the right answer is the average of a few marked
items, so it is a blend that no single item equals.

Each example is a set of ``n_items`` random vectors; ``n_marked`` of them
carry a mark, the value ``mark`` in their first coordinate (every other item
has 0 there). The right answer is the mean of the marked items. With one mark
it is one item, as in ``experiments.hard_training.selection_task``; with two
or more, soft attention can output it (equal weights on the marked items)
while any hard choice outputs one item and misses it by at least
min_n |x_n - t|^2.
"""

import torch

from .._checks import require_finite_number, require_int
from .._memory import require_matrix_fits
from .._random import require_generator


def marked_items(
    n_examples: int,
    n_marked: int = 2,
    n_items: int = 32,
    dim: int = 16,
    mark: float = 2.0,
    generator: torch.Generator | None = None,
):
    """Random item sets, the marked items of each and their average.

    Returns items (n_examples, n_items, dim) float64, N(0, 1) entries except
    the first coordinate, ``mark`` for the marked items and 0 for the others;
    marked (n_examples, n_marked) int64, the marked items' indices in
    increasing order; target (n_examples, dim) float64, the mean of the
    marked items. generator: None draws from torch's global generator.
    """
    require_int("n_examples", n_examples)
    require_int("n_items", n_items, minimum=2)
    require_int("n_marked", n_marked)
    if n_marked > n_items:
        raise ValueError(
            f"n_marked ({n_marked}) must be at most n_items ({n_items})"
        )
    require_int("dim", dim, minimum=2)
    require_finite_number("mark", mark, low=-1e6, high=1e6)
    require_generator("generator", generator, allow_none=True)
    require_matrix_fits(
        "the items",
        (n_examples, n_items, dim),
        torch.float64,
        hint="use fewer, or",
    )
    items = torch.randn(
        n_examples, n_items, dim, generator=generator, dtype=torch.float64
    )
    order = torch.rand(
        n_examples, n_items, generator=generator, dtype=torch.float64
    ).argsort(dim=-1)
    marked = order[:, :n_marked].sort(dim=-1).values
    items[..., 0] = 0.0
    items[torch.arange(n_examples)[:, None], marked, 0] = float(mark)
    rows = torch.arange(n_examples)[:, None]
    target = items[rows, marked].mean(dim=-2)
    return items, marked, target
