"""Soft against hard attention when the right answer is a blend (chapter 3).

The same ``QuerySelector`` as ``hard_training``, trained on
``attnbook.tasks.blend.marked_items``: the right answer t is the mean of the
``n_marked`` marked items. With one mark, soft and hard attention share the
best answer (all the weight on that item). With two, soft attention's output
sum_n alpha_n x_n can equal t (half the weight on each marked item), while a
hard choice outputs one item x_z, whose loss |x_z - t|^2 is at least
min_n |x_n - t|^2 (the *floor*), whatever the distribution and however it is
trained. Everything runs in float64 on one thread with explicit generators.
"""

import torch

from .._checks import all_finite, require_ids, require_int, require_training
from .._random import seeded_generator
from ..measure.threads import single_thread
from ..tasks.blend import marked_items
from .hard_training import (
    QuerySelector,
    check_method,
    check_selection,
    choice_losses,
    expected_loss,
    selector_loss,
    soft_loss,
)


def train_blend_selector(
    method: str,
    n_marked: int = 2,
    steps: int = 200,
    batch_size: int = 8,
    lr: float = 0.1,
    seed: int = 0,
    n_test: int = 500,
    eval_every: int = 10,
    n_items: int = 32,
    dim: int = 16,
) -> dict:
    """Train a ``QuerySelector`` on ``marked_items`` with ``method`` ("soft",
    "expected", "reinforce" or "gumbel", as ``hard_training.selector_loss``)
    and test it on ``n_test`` examples drawn with their own generator.

    Returns ``steps`` (0, eval_every, ..., steps) and, measured on the test
    set at those steps, lists ``soft_loss`` (the loss of the weighted
    average), ``hard_loss`` (the expected loss of one sampled item),
    ``floor`` (mean of min_n |x_n - t|^2, the least any hard choice can lose;
    the same at every step) and ``marked_weight`` (mean total weight on the
    marked items); and the trained ``model``.
    """
    check_method(method)
    require_int("n_marked", n_marked)
    require_int("n_test", n_test)
    require_training(
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        seed=seed,
        eval_every=eval_every,
    )
    if batch_size < 2:
        raise ValueError(f"batch_size must be at least 2, got {batch_size}")
    sizes = {"n_marked": n_marked, "n_items": n_items, "dim": dim}
    test = marked_items(n_test, **sizes, generator=seeded_generator(seed + 2))
    with single_thread():
        return _fit(
            method, sizes, (steps, batch_size, lr, seed), test, eval_every
        )


def _fit(method, sizes, recipe, test, eval_every) -> dict:
    """The training loop (arguments checked): Adam on fresh batches, the
    test set's report every ``eval_every`` steps and after the last."""
    steps, batch_size, lr, seed = recipe
    data = seeded_generator(seed)  # training batches
    draws = torch.Generator().manual_seed(seed + 1)  # sampled choices
    model = QuerySelector(sizes["dim"])
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = {"steps": []}
    for step in range(steps + 1):
        if step % eval_every == 0 or step == steps:
            history["steps"].append(step)
            for name, value in blend_report(model, *test).items():
                history.setdefault(name, []).append(value)
        if step == steps:
            break
        items, _, target = marked_items(batch_size, **sizes, generator=data)
        scores = model.scores(items)
        loss = selector_loss(method, scores, items, target, draws)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {**history, "model": model}


def blend_report(model, items, marked, target) -> dict:
    """Test losses of ``model`` on a ``marked_items`` set, as floats:
    soft_loss, hard_loss, floor and marked_weight (see
    ``train_blend_selector``)."""
    if not isinstance(model, QuerySelector):
        raise TypeError(
            f"model must be a QuerySelector, got {type(model).__name__}"
        )
    check_selection(items, target)
    if not all_finite(items):
        raise ValueError("items must be finite")
    batch, n = items.shape[:2]
    require_ids("marked", marked, n, dims=2)
    if len(marked) != batch or marked.shape[1] == 0:
        raise ValueError(
            f"marked must be ({batch}, n_marked >= 1) for items "
            f"{tuple(items.shape)}, got {tuple(marked.shape)}"
        )
    with torch.no_grad():
        weights = model(items.to(model.query.dtype))
        return {
            "soft_loss": soft_loss(weights, items, target).item(),
            "hard_loss": expected_loss(weights, items, target).item(),
            "floor": choice_losses(items, target)
            .min(dim=-1)
            .values.mean()
            .item(),
            "marked_weight": weights.gather(-1, marked)
            .sum(dim=-1)
            .mean()
            .item(),
        }
