"""Training hard attention with REINFORCE, next to the same model with soft
attention.

The toy task: each example is a set of ``n_items`` random vectors; the right
answer is the item with the largest projection on a hidden direction. A
``QuerySelector`` learns one query vector; its attention distribution over the
items says which item it selects.

- Soft attention outputs the weighted average of the items and is trained by
  ordinary backpropagation of ``|average - right item|^2``.
- Hard attention samples one item z from the distribution and outputs it. The
  loss ``|x_z - right item|^2`` has no gradient with respect to the scores (z
  is a discrete draw), so the gradient of its expectation is estimated with the
  score-function (REINFORCE) estimator ``(L(z) - b) * grad log p(z)``.
- The same expected loss ``E_z |x_z - right item|^2 = sum_n p_n L_n`` can also
  be differentiated exactly when there are few items (method "expected"): the
  objective of hard attention without REINFORCE's sampling noise.
- Straight-through Gumbel-softmax (method "gumbel"): the forward pass outputs
  one sampled item (Gumbel-max), the backward pass differentiates a softmax
  of the perturbed scores instead (biased, but far less noisy than REINFORCE).

``python -m attnbook.train.hard_selectors`` runs the chapter's sweep (every
method at five learning rates, ten seeds) and writes
``data/hard_selectors.json``; ``shipped_selector_sweep()`` reads it, checked
against ``HARD_SELECTORS_SHA256``.

Everything runs in float64 with explicit generators, so the numbers are the
same on every machine and thread count.
"""

import json

import torch
from torch import nn

from .._checks import (
    all_finite,
    require_finite_number,
    require_float,
    require_ids,
    require_int,
    require_same_device,
    require_same_size,
    require_saved,
    require_sequences,
    require_shape,
    require_training,
)
from .._memory import require_matrix_fits, require_weights_fit
from .._random import (
    require_generator,
    restores_rng_on_error,
    seeded_generator,
)
from .._weights import read_pinned
from ..core.scoring import scaled_dot_score
from ..measure.threads import single_thread

METHODS = ("soft", "reinforce", "expected", "gumbel")
HARD_SELECTORS_FILE = "hard_selectors.json"
HARD_SELECTORS_SHA256 = (
    "fa1d6c8e8ad3bfd26630d3be126609d1a4b05eb20bf4fd97a188a19531ed3369"
)


def hidden_direction(dim: int, seed: int = 0) -> torch.Tensor:
    """The unit vector (dim,) that defines the right item of
    ``selection_task``."""
    require_int("dim", dim)
    require_int("seed", seed, minimum=0)
    require_matrix_fits("the direction", (dim,), torch.float64)
    direction = torch.randn(
        dim, generator=seeded_generator(seed), dtype=torch.float64
    )
    return direction / direction.norm()


def selection_task(
    n_examples: int,
    n_items: int = 32,
    dim: int = 16,
    generator: torch.Generator | None = None,
):
    """Random item sets and the index of the item to select in each.

    Returns items (n_examples, n_items, dim) with N(0, 1) entries (float64) and
    target (n_examples,) int64: the item with the largest projection on
    ``hidden_direction(dim)``. generator: None draws from torch's global
    generator, as torch does.
    """
    require_int("n_examples", n_examples)
    require_generator("generator", generator, allow_none=True)
    require_int("n_items", n_items, minimum=2)
    require_int("dim", dim)
    require_matrix_fits(
        "the items",
        (n_examples, n_items, dim),
        torch.float64,
        hint="use fewer, or",
    )
    items = torch.randn(
        n_examples, n_items, dim, generator=generator, dtype=torch.float64
    )
    target = (items @ hidden_direction(dim)).argmax(dim=-1)
    return items, target


class QuerySelector(nn.Module):
    """One learned query vector scored against every item with
    ``scaled_dot_score``.

    Called on items (batch, n_items, dim), returns the attention distribution
    (batch, n_items); ``scores(items)`` returns the scores (logits) it is the
    softmax of. The query starts at zero: a uniform distribution.
    """

    @restores_rng_on_error
    def __init__(self, dim: int):
        super().__init__()
        require_int("dim", dim)
        require_weights_fit("QuerySelector", (dim,))
        self.query = nn.Parameter(torch.zeros(dim, dtype=torch.float64))

    def scores(self, items: torch.Tensor) -> torch.Tensor:
        """x_n . q / sqrt(dim) for every item: (batch, n_items)."""
        require_sequences(items=items)
        require_same_size(
            "feature sizes",
            "items",
            items.shape[-1],
            "query",
            self.query.shape[0],
        )
        return scaled_dot_score(self.query.view(1, 1, -1), items).squeeze(-2)

    def forward(self, items: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.scores(items), dim=-1)


_NO_WEIGHTS = object()  # choice_losses, evaluate_selector: no weights


def check_selection(items, target, weights=_NO_WEIGHTS) -> None:
    """items (batch, n, dim) float; target (batch,) int64 in [0, n), or the
    right answer itself, finite (batch, dim) of the items' dtype; and weights
    (batch, n) of the items' dtype: a clear error otherwise."""
    require_float("items", items)
    if items.dim() != 3 or 0 in items.shape[:2]:
        raise ValueError(
            f"items must be (batch, n_items, dim), got {tuple(items.shape)}"
        )
    batch, n = items.shape[:2]
    if isinstance(target, torch.Tensor) and target.is_floating_point():
        if target.dim() != 2:
            raise TypeError(
                "target must be int64 item indices (batch,) or a float "
                f"vector target (batch, dim), got {target.dtype} "
                f"{tuple(target.shape)}"
            )
        if target.shape != (batch, items.shape[2]) or (
            target.dtype != items.dtype
        ):
            raise ValueError(
                f"a vector target must be ({batch}, {items.shape[2]}) "
                f"{items.dtype}, got {tuple(target.shape)} {target.dtype}"
            )
        if not all_finite(target):
            raise ValueError("target must be finite")
    else:
        require_ids("target", target, n, dims=1)
        require_same_size("batch size", "items", batch, "target", len(target))
    if weights is not _NO_WEIGHTS:
        require_float("weights", weights)
        if weights.shape != (batch, n) or weights.dtype != items.dtype:
            raise ValueError(
                f"weights must be ({batch}, {n}) {items.dtype}, got "
                f"{tuple(weights.shape)} {weights.dtype}"
            )
        if not (all_finite(weights) and bool((weights >= 0).all())):
            raise ValueError(
                "weights must be finite and >= 0 (a distribution)"
            )


def right_answer(items: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The vector (batch, dim) the output should equal: the target item
    x_target if target is (batch,) indices, else target itself (batch, dim),
    e.g. a blend of items (``attnbook.tasks.blend.marked_items``)."""
    check_selection(items, target)
    if target.is_floating_point():
        return target
    return items[torch.arange(items.shape[0]), target]


def choice_losses(items: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Squared distance from every item to the right answer: L_n = |x_n -
    t|^2, t = ``right_answer(items, target)``.

    items: (batch, n_items, dim), target: (batch,) or (batch, dim). Returns
    (batch, n_items).
    """
    right = right_answer(items, target)  # (batch, dim)
    return ((items - right.unsqueeze(-2)) ** 2).sum(dim=-1)


def soft_loss(
    weights: torch.Tensor, items: torch.Tensor, target: torch.Tensor
) -> torch.Tensor:
    """Mean over the batch of |sum_n w_n x_n - t|^2, t the right answer
    (``right_answer``); differentiable in the weights."""
    check_selection(items, target, weights)
    output = (weights.unsqueeze(-1) * items).sum(dim=-2)
    right = right_answer(items, target)
    return ((output - right) ** 2).sum(dim=-1).mean()


def expected_loss(
    weights: torch.Tensor, items: torch.Tensor, target: torch.Tensor
) -> torch.Tensor:
    """Mean over the batch of E_z[L(z)] = sum_n w_n |x_n - x_target|^2
    (differentiable in the weights).

    weights: (batch, n_items), items: (batch, n_items, dim), target: (batch,).
    Its gradient is the exact gradient of hard attention's expected loss, the
    quantity REINFORCE estimates from one sample per example.
    """
    check_selection(items, target, weights)
    return (weights * choice_losses(items, target)).sum(dim=-1).mean()


def reinforce_surrogate(log_probs, losses, baseline=0.0) -> torch.Tensor:
    """A scalar whose gradient is the REINFORCE estimate of grad E[L].

    log_probs: (batch,) log p(z) of the sampled choices (with gradient);
    losses: (batch,) their losses L(z); baseline b: a number, or a (batch,)
    tensor that does not depend on the example's own choice. Returns
    mean((L - b) * log p(z)) with L - b detached: backward() gives
    mean((L - b) * grad log p(z)), the score-function estimate.
    """
    _check_surrogate(log_probs, losses, baseline)
    return ((losses - baseline).detach() * log_probs).mean()


def _check_surrogate(log_probs, losses, baseline) -> None:
    """log_probs and losses: float (batch,), batch >= 1, one dtype; baseline
    a number the losses' dtype holds, or a float tensor of shape (batch,)."""
    for name, tensor in (("log_probs", log_probs), ("losses", losses)):
        require_float(name, tensor)
        if tensor.dim() != 1 or len(tensor) == 0:
            raise ValueError(
                f"{name} must have shape (batch,) with batch >= 1, got "
                f"{tuple(tensor.shape)}"
            )
    require_same_size(
        "batch", "log_probs", len(log_probs), "losses", len(losses)
    )
    require_same_device(log_probs=log_probs, losses=losses)
    if isinstance(baseline, torch.Tensor):
        require_float("baseline", baseline)
        if baseline.shape not in ((), losses.shape):
            raise ValueError(
                "baseline must be a number or have shape "
                f"{tuple(losses.shape)}, got {tuple(baseline.shape)}"
            )
        return
    largest = float(torch.finfo(losses.dtype).max)
    require_finite_number("baseline", baseline, low=-largest, high=largest)


def leave_one_out_baseline(losses: torch.Tensor) -> torch.Tensor:
    """For each example, the mean loss of the *other* examples of the batch
    (batch,)."""
    require_float("losses", losses)
    require_shape("losses", losses, (None,))
    n = losses.shape[0]
    if n < 2:
        raise ValueError(
            f"a leave-one-out baseline needs a batch of at least 2, got {n}"
        )
    require_matrix_fits(
        "the baselines", (2, n), losses.dtype, hint="use a smaller batch, or"
    )
    return (losses.sum() - losses) / (n - 1)


def evaluate_selector(
    model: QuerySelector,
    items: torch.Tensor,
    target: torch.Tensor,
    losses: torch.Tensor | None = None,
) -> dict:
    """Accuracy of the argmax choice, the soft loss and the expected hard loss,
    as floats.

    losses: ``choice_losses(items, target)`` if already computed (a fixed test
    set's never change; computing them is most of the cost of an evaluation).
    """
    if not isinstance(model, QuerySelector):
        raise TypeError(
            f"model must be a QuerySelector, got {type(model).__name__}"
        )
    check_selection(items, target)
    if target.is_floating_point():
        raise ValueError(
            "evaluate_selector counts right choices: target must be item "
            f"indices (batch,), got a vector target {tuple(target.shape)}"
        )
    if losses is not None:
        require_float("losses", losses)
        require_shape("losses", losses, tuple(items.shape[:2]))
    with torch.no_grad():
        weights = model(items)
        losses = choice_losses(items, target) if losses is None else losses
        return {
            "accuracy": (weights.argmax(dim=-1) == target)
            .double()
            .mean()
            .item(),
            "soft_loss": soft_loss(weights, items, target).item(),
            "hard_loss": (weights * losses)
            .sum(dim=-1)
            .mean()
            .item(),  # expected_loss, reusing the losses
        }


def selector_loss(
    method, scores, items, target, generator=None, baseline=True
) -> torch.Tensor:
    """The scalar to backpropagate for one batch, by training ``method``.

    scores (batch, n): the selector's scores, whose softmax is the attention
    distribution; items (batch, n, dim), target (batch,). "soft": the loss of
    the weighted average; "expected": hard attention's exact expected loss;
    "reinforce": the REINFORCE surrogate of it (``reinforce_loss``);
    "gumbel": straight-through Gumbel-softmax (``gumbel_loss``). The last two
    draw with ``generator`` (None: torch's global generator).
    """
    check_method(method)
    _check_scores(scores, items)
    if method == "soft":
        return soft_loss(scores.softmax(dim=-1), items, target)
    if method == "expected":
        return expected_loss(scores.softmax(dim=-1), items, target)
    if method == "gumbel":
        return gumbel_loss(scores, items, target, generator)
    return reinforce_loss(scores, items, target, generator, baseline)


def reinforce_loss(scores, items, target, generator=None, baseline=True):
    """REINFORCE's surrogate for one batch: one item z ~ softmax(``scores``)
    drawn per example with ``generator`` (None: torch's global generator);
    baseline leave-one-out (False: none). log p(z) is a log_softmax of the
    scores, finite even where p(z) underflows."""
    _check_draw(scores, items, target, generator)
    log_weights = torch.log_softmax(scores, dim=-1)
    rows = torch.arange(scores.shape[0])
    weights = log_weights.detach().exp()
    z = torch.multinomial(weights, 1, generator=generator).squeeze(-1)
    losses = choice_losses(items, target)[rows, z]  # L(z): no gradient path
    b = leave_one_out_baseline(losses) if baseline else 0.0
    return reinforce_surrogate(log_weights[rows, z], losses, b)


def gumbel_loss(scores, items, target, generator=None, tau=1.0):
    """Straight-through Gumbel-softmax loss for one batch.

    Forward: the item z = argmax(scores + g), g Gumbel noise drawn with
    ``generator`` (z ~ softmax(scores): the Gumbel-max trick), and its loss
    |x_z - x_target|^2. Backward: through the relaxed choice
    softmax((scores + g) / tau) in place of the one-hot one. scores (batch,
    n), items (batch, n, dim), target (batch,).
    """
    _check_draw(scores, items, target, generator, tau)
    tiny = torch.finfo(scores.dtype).tiny
    u = torch.rand(scores.shape, generator=generator, dtype=scores.dtype)
    gumbel = -torch.log(-torch.log(u.clamp_min(tiny)))
    relaxed = torch.softmax((scores + gumbel) / tau, dim=-1)
    one_hot = torch.zeros_like(relaxed)
    one_hot.scatter_(-1, relaxed.argmax(dim=-1, keepdim=True), 1.0)
    choice = one_hot + relaxed - relaxed.detach()  # value: one-hot
    return soft_loss(choice, items, target)


def _check_draw(scores, items, target, generator, tau=1.0) -> None:
    """A hard selector's draw: scores (batch, n) finite, matching items
    (batch, n, dim); target (batch,); a generator or None; tau in [1e-3,
    1e3]."""
    _check_scores(scores, items)
    check_selection(items, target)
    require_generator("generator", generator, allow_none=True)
    require_finite_number("tau", tau, low=1e-3, high=1e3)


def _check_scores(scores, items) -> None:
    """scores: finite float (batch, n) matching items (batch, n, dim)."""
    require_float("scores", scores)
    require_float("items", items)
    if items.dim() != 3 or scores.shape != items.shape[:2]:
        raise ValueError(
            f"scores must be (batch, n_items) = {tuple(items.shape[:2])} "
            f"for items {tuple(items.shape)}, got {tuple(scores.shape)}"
        )
    if scores.dtype != items.dtype:
        raise ValueError(
            f"scores must have the items' dtype {items.dtype}, got "
            f"{scores.dtype}"
        )
    if not all_finite(scores):
        raise ValueError("scores must be finite")


def check_method(method) -> None:
    """``method`` one of ``METHODS`` ("soft", "expected", "reinforce",
    "gumbel")."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def train_selector(
    method: str,
    steps: int = 300,
    batch_size: int = 8,
    lr: float = 0.05,
    n_items: int = 32,
    dim: int = 16,
    seed: int = 0,
    eval_every: int = 10,
    n_test: int = 1000,
    baseline: bool = True,
) -> dict:
    """Train a ``QuerySelector`` with soft attention or with hard attention's
    expected loss.

    method: "soft" (backpropagate ``soft_loss``), "expected" (backpropagate
    ``expected_loss``, its exact gradient), "reinforce" (sample one item per
    example, use ``reinforce_surrogate`` with a leave-one-out baseline, or none
    if ``baseline`` is False) or "gumbel" (straight-through Gumbel-softmax,
    ``gumbel_loss``); see ``selector_loss``. All use Adam, the same
    training batches and the same test set. Returns a dict with ``model``,
    ``steps`` (list of ints) and, measured on the test set at those steps,
    lists ``accuracy``, ``soft_loss`` and ``hard_loss``. Runs on one thread
    (see ``attnbook.measure.threads``).
    """
    check_method(method)
    require_training(
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        seed=seed,
        eval_every=eval_every,
    )
    require_int("n_test", n_test)
    if batch_size < 2:
        raise ValueError(f"batch_size must be at least 2, got {batch_size}")
    with single_thread():
        return training_loop(
            method,
            steps,
            batch_size,
            lr,
            n_items,
            dim,
            seed,
            eval_every,
            n_test,
            baseline,
        )


def training_loop(
    method,
    steps,
    batch_size,
    lr,
    n_items,
    dim,
    seed,
    eval_every,
    n_test,
    baseline,
) -> dict:
    """The training loop of ``train_selector`` (arguments already checked)."""
    data = seeded_generator(seed)  # training batches
    draws = torch.Generator().manual_seed(seed + 1)  # sampled choices
    test = selection_task(n_test, n_items, dim, seeded_generator(seed + 2))
    model = QuerySelector(dim)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = _History(method, *test)
    for step in range(steps):
        if step % eval_every == 0:
            history.record(step, model)
        items, target = selection_task(batch_size, n_items, dim, data)
        scores = model.scores(items)
        loss = selector_loss(method, scores, items, target, draws, baseline)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    history.record(steps, model)
    return {**history.lists, "model": model}


class _History:
    """Test accuracy and losses of a model, recorded at training steps."""

    def __init__(self, method, test_items, test_target):
        self.test = (test_items, test_target)
        self.test_losses = choice_losses(test_items, test_target)
        self.lists = {"method": method, "steps": []}
        for name in ("accuracy", "soft_loss", "hard_loss"):
            self.lists[name] = []

    def record(self, step, model) -> None:
        self.lists["steps"].append(step)
        report = evaluate_selector(model, *self.test, self.test_losses)
        for name, value in report.items():
            self.lists[name].append(value)


def steps_to_accuracy(history: dict, level: float = 0.8) -> int | None:
    """The first evaluated step at which ``history``'s test accuracy reached
    ``level`` (None if never)."""
    if not isinstance(history, dict) or {"steps", "accuracy"} - set(history):
        raise TypeError(
            "history must be the dict train_selector returns, got "
            f"{str(history):.40}"
        )
    require_finite_number("level", level, low=0.0, high=1.0)
    return next(
        (
            step
            for step, accuracy in zip(history["steps"], history["accuracy"])
            if accuracy >= level
        ),
        None,
    )


def _check_grid(**grids) -> None:
    """Each grid a non-empty list, tuple or range."""
    for name, values in grids.items():
        if not isinstance(values, (list, tuple, range)) or len(values) == 0:
            raise ValueError(
                f"{name} must be a non-empty list, tuple or range, got "
                f"{values!r:.60}"
            )


def compare_selectors(
    methods=METHODS,
    lrs=(0.03, 0.1, 0.3),
    seeds=range(5),
    level: float = 0.8,
    **train_kwargs,
) -> list[dict]:
    """Train every method at every learning rate with every seed
    (``train_selector``).

    Same steps, batches, test sets and seeds for every method. Returns one dict
    per (method, lr) with lists over the seeds: final ``accuracy``,
    ``hard_loss`` and ``soft_loss``, ``steps_to`` (``steps_to_accuracy`` at
    ``level``, None if never), and ``curves`` (seeds x evaluations test
    accuracy) at ``steps``.
    """
    _check_grid(methods=methods, lrs=lrs, seeds=seeds)
    require_finite_number("level", level, low=0.0, high=1.0)
    rows = []
    for method in methods:
        for lr in lrs:
            runs = [
                train_selector(method, lr=lr, seed=seed, **train_kwargs)
                for seed in seeds
            ]
            rows.append(
                {
                    "method": method,
                    "lr": lr,
                    "steps": runs[0]["steps"],
                    "accuracy": [run["accuracy"][-1] for run in runs],
                    "hard_loss": [run["hard_loss"][-1] for run in runs],
                    "soft_loss": [run["soft_loss"][-1] for run in runs],
                    "steps_to": [
                        steps_to_accuracy(run, level) for run in runs
                    ],
                    "curves": [run["accuracy"] for run in runs],
                }
            )
    return rows


SWEEP_RECIPE = {
    "methods": list(METHODS),
    "lrs": [0.01, 0.03, 0.1, 0.3, 1.0],
    "seeds": list(range(10)),
    "level": 0.8,
    "train": {"steps": 300, "batch_size": 8, "n_items": 32, "dim": 16},
}


def run_sweep(recipe: dict = SWEEP_RECIPE) -> str:
    """The file ``shipped_selector_sweep`` reads: ``compare_selectors``
    with ``recipe`` for every method, and for REINFORCE without a baseline,
    as JSON text (losses rounded to 1e-6)."""
    require_saved(
        "recipe", recipe, "lrs", "seeds", "level", "methods", "train"
    )
    grid = {key: recipe[key] for key in ("lrs", "seeds", "level")}
    rows = compare_selectors(recipe["methods"], **grid, **recipe["train"])
    no_baseline = compare_selectors(
        ("reinforce",), **grid, **recipe["train"], baseline=False
    )
    for row in rows + no_baseline:
        for name in ("hard_loss", "soft_loss"):
            row[name] = [round(value, 6) for value in row[name]]
    result = {"recipe": recipe, "rows": rows, "no_baseline": no_baseline}
    return json.dumps(result, indent=1) + "\n"


def shipped_selector_sweep() -> dict:
    """The shipped sweep (``python -m attnbook.train.hard_selectors``):
    {"recipe": SWEEP_RECIPE, "rows": ``compare_selectors``' rows for every
    method and learning rate, "no_baseline": the rows of REINFORCE without a
    baseline}, checked against ``HARD_SELECTORS_SHA256``."""
    return json.loads(read_pinned(HARD_SELECTORS_FILE, HARD_SELECTORS_SHA256))
