"""Chapter 3's blend task and the selectors trained on it."""

import pytest
import torch

from attnbook.experiments.blend_training import (
    blend_report,
    train_blend_selector,
)
from attnbook.experiments.hard_training import (
    QuerySelector,
    choice_losses,
    evaluate_selector,
    soft_loss,
)
from attnbook.tasks.blend import marked_items


def _task(n_marked=2, seed=0, **kw):
    generator = torch.Generator().manual_seed(seed)
    return marked_items(5, n_marked, generator=generator, **kw)


def test_marked_items_marks_and_target():
    items, marked, target = _task(n_marked=3, n_items=7, dim=4, mark=2.5)
    assert items.shape == (5, 7, 4) and marked.shape == (5, 3)
    assert items.dtype == torch.float64 and marked.dtype == torch.int64
    for row in range(5):
        ids = marked[row].tolist()
        assert ids == sorted(set(ids))
        first = items[row, :, 0]
        assert torch.equal(
            first[ids], torch.full((3,), 2.5, dtype=first.dtype)
        )
        assert (first != 0).sum() == 3
        assert torch.allclose(target[row], items[row, ids].mean(dim=0))


def test_marked_items_seeded_and_global_rng_untouched():
    state = torch.get_rng_state()
    a, b = _task(seed=4), _task(seed=4)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert torch.equal(state, torch.get_rng_state())


def test_soft_output_reaches_blend_hard_cannot():
    # equal weights on the two marked items give the target exactly; every
    # hard choice misses it by at least the floor, |x1 - x2|^2 / 4 here
    items, marked, target = _task(n_marked=2, n_items=6, dim=5)
    weights = torch.zeros(5, 6, dtype=torch.float64)
    weights.scatter_(1, marked, 0.5)
    assert soft_loss(weights, items, target).item() < 1e-24
    losses = choice_losses(items, target)
    rows = torch.arange(5)
    half_gap = (
        (items[rows, marked[:, 0]] - items[rows, marked[:, 1]]) ** 2
    ).sum(-1) / 4
    assert torch.allclose(
        losses.gather(1, marked), half_gap[:, None].expand(5, 2)
    )
    assert (losses.min(dim=-1).values > 0).all()


def test_blend_report_floor_and_weight():
    items, marked, target = _task(n_marked=1)
    report = blend_report(QuerySelector(16), items, marked, target)
    assert report["floor"] == 0.0  # one mark: the marked item is the answer
    assert report["marked_weight"] == pytest.approx(1 / 32)


def test_soft_learns_the_blend_and_hard_stays_above_the_floor():
    soft = train_blend_selector(
        "soft", n_marked=2, steps=60, lr=0.3, n_test=100
    )
    hard = train_blend_selector(
        "expected", n_marked=2, steps=60, lr=0.3, n_test=100
    )
    assert soft["floor"] == hard["floor"]  # same test set
    assert soft["soft_loss"][-1] < 0.05 * soft["soft_loss"][0]
    assert min(hard["hard_loss"]) >= hard["floor"][0]
    assert hard["marked_weight"][-1] > 0.9
    assert soft["steps"] == list(range(0, 61, 10))


def test_vector_target_errors():
    items, _, target = _task()
    with pytest.raises(ValueError, match="vector target must be"):
        choice_losses(items, target[:, :3])
    with pytest.raises(ValueError, match="finite"):
        choice_losses(items, target * float("nan"))
    with pytest.raises(ValueError, match="target must be item indices"):
        evaluate_selector(QuerySelector(16), items, target)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n_marked": 0}, "n_marked"),
        ({"n_marked": 9, "n_items": 8}, "at most n_items"),
        ({"dim": 1}, "dim"),
        ({"mark": float("inf")}, "mark"),
    ],
)
def test_marked_items_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        marked_items(2, **kwargs)


def test_train_blend_selector_bad_input():
    with pytest.raises(ValueError, match="method"):
        train_blend_selector("argmax")
    with pytest.raises(ValueError, match="batch_size"):
        train_blend_selector("soft", batch_size=1)


def test_a_float_index_target_is_a_type_error():
    items, _, _ = _task()
    with pytest.raises(TypeError, match="target must be int64"):
        choice_losses(items, torch.zeros(5, dtype=torch.float64))
