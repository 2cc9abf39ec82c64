"""Training with and without the 1/sqrt(d) of scaled dot-product scores
(chapter 2).

The task: retrieve a noisy copy. Each example holds ``n_keys`` vectors
x_1..x_n with N(0, 1) entries in ``dim`` dimensions and a query
q = x_t + noise * eps for a target t drawn uniformly; the model must put its
largest attention weight on key t. The model learns two projections, W^Q and
W^K (each (dim, dim), Xavier-initialised, so projected queries and keys start
with unit-variance entries, as in chapter 2), and scores
s_j = (W^Q q) . (W^K x_j), divided by sqrt(dim) in the scaled arm only. It is
trained by cross-entropy of softmax(s) against t with Adam.

Both arms see the same batches, the same initial weights and the same number
of steps; each gets its own learning-rate sweep, and its learning rate is
chosen on a validation set, disjoint from the test set the results report.

``python -m attnbook.train.scale_training`` runs the chapter's sweep and
writes ``data/scale_training.json``; ``shipped_scale_sweep()`` reads it,
checked against ``SCALE_TRAINING_SHA256``. Everything runs in float64 with
explicit generators, so the numbers do not depend on the machine.
"""

import json
import math

import torch
from torch import nn

from .._checks import (
    require_float,
    require_ids,
    require_int,
    require_positive,
    require_same_device,
    require_tensor,
    require_training,
)
from .._memory import require_matrix_fits, require_weights_fit
from .._random import (
    require_generator,
    restores_rng_on_error,
    seeded_generator,
)
from .._weights import read_pinned

SCALE_TRAINING_FILE = "scale_training.json"
SCALE_TRAINING_SHA256 = (
    "c50cc3eca3ad820522f9ba345614d4cef454823655d894a5911fc221f586c2f3"
)

VALIDATION_SEED = 1_000_003
TEST_SEED = 2_000_003
"""Generator seeds of the validation and test sets; training batches use
the run's seed (below 1,000,000), so no set repeats another's draws."""


def noisy_copy_task(
    n_sets: int,
    n_queries: int,
    n_keys: int,
    dim: int,
    noise: float = 1.0,
    generator: torch.Generator | None = None,
):
    """``n_sets`` sets of keys, each with ``n_queries`` queries that are
    noisy copies of its keys: returns queries (n_sets, n_queries, dim), keys
    (n_sets, n_keys, dim), float64 with N(0, 1) entries, and targets
    (n_sets, n_queries), int64, with query = keys[target] + noise * N(0, I).
    generator: None draws from torch's global generator, as torch does."""
    for name, value in (("n_sets", n_sets), ("n_queries", n_queries),
                        ("dim", dim)):  # fmt: skip
        require_int(name, value)
    require_int("n_keys", n_keys, minimum=2)
    require_positive("noise", noise)
    require_generator("generator", generator, allow_none=True)
    f64 = torch.float64
    shapes = {
        "the keys (n_sets, n_keys, dim)": (n_sets, n_keys, dim),
        "the queries (n_sets, n_queries, dim)": (n_sets, n_queries, dim),
    }
    for what, shape in shapes.items():
        require_matrix_fits(what, shape, f64, hint="use fewer, or")
    keys = torch.randn(n_sets, n_keys, dim, generator=generator, dtype=f64)
    targets = torch.randint(n_keys, (n_sets, n_queries), generator=generator)
    noisy = torch.randn(n_sets, n_queries, dim, generator=generator, dtype=f64)
    copies = torch.gather(keys, 1, targets[..., None].expand(-1, -1, dim))
    return copies + noise * noisy, keys, targets


class ProjectedDotScore(nn.Module):
    """Scores (W^Q q) . (W^K k), times 1/sqrt(dim) if ``scaled``.

    Called on queries (..., n_q, dim) and keys (..., n_k, dim), returns the
    scores (..., n_q, n_k). W^Q and W^K are (dim, dim), Xavier-uniform from
    ``generator`` (torch's global one if None), float64.
    """

    @restores_rng_on_error
    def __init__(self, dim: int, scaled: bool, generator=None):
        super().__init__()
        require_int("dim", dim)
        require_generator("generator", generator, allow_none=True)
        require_weights_fit(
            f"ProjectedDotScore (dim={dim})", (dim, dim), (dim, dim)
        )
        self.scaled = bool(scaled)
        self.W_Q, self.W_K = (
            nn.Parameter(
                nn.init.xavier_uniform_(
                    torch.empty(dim, dim, dtype=torch.float64),
                    generator=generator,
                )
            )
            for _ in range(2)
        )

    def forward(self, queries, keys):
        self._check(queries, keys)
        # (q W^Q^T) . (k W^K^T) = (q W^Q^T W^K) . k, the same number
        scores = (queries @ self.W_Q.T @ self.W_K) @ keys.transpose(-1, -2)
        if self.scaled:
            scores = scores / math.sqrt(keys.shape[-1])
        return scores

    def _check(self, queries, keys) -> None:
        dim = self.W_Q.shape[0]
        for name, tensor in (("queries", queries), ("keys", keys)):
            require_float(name, tensor)
            if tensor.dim() < 2 or tensor.shape[-1] != dim:
                raise ValueError(
                    f"{name} must be (..., n, {dim}), got shape "
                    f"{tuple(tensor.shape)}"
                )
            if tensor.dtype != self.W_Q.dtype:
                raise TypeError(
                    f"{name} must be {self.W_Q.dtype} like the weights, got "
                    f"{tensor.dtype}"
                )
        require_same_device(queries=queries, keys=keys, weights=self.W_Q)
        if queries.shape[:-2] != keys.shape[:-2]:
            raise ValueError(
                f"queries {tuple(queries.shape)} and keys "
                f"{tuple(keys.shape)} must have the same leading sizes"
            )
        scores = (*queries.shape[:-1], keys.shape[-2])
        require_matrix_fits("the scores", scores, queries.dtype)


def evaluate(model, data) -> tuple[float, float]:
    """(accuracy, mean cross-entropy in nats) of ``model`` on ``data`` =
    (queries, keys, targets) as ``noisy_copy_task`` returns them."""
    if not isinstance(model, ProjectedDotScore):
        raise TypeError(
            f"model must be a ProjectedDotScore, got {type(model).__name__}"
        )
    if not (isinstance(data, (tuple, list)) and len(data) == 3):
        raise TypeError(
            "data must be (queries, keys, targets) as noisy_copy_task "
            f"returns, got {type(data).__name__}"
        )
    queries, keys, targets = data
    require_tensor("data's queries", queries)
    require_tensor("data's keys", keys)
    require_ids("data's targets", targets, keys.shape[-2], dims=2)
    if targets.shape != queries.shape[:2]:
        raise ValueError(
            f"data's targets {tuple(targets.shape)} must give one key per "
            f"query of queries {tuple(queries.shape)}"
        )
    with torch.no_grad():
        scores = model(queries, keys)
        loss = nn.functional.cross_entropy(
            scores.flatten(0, -2), targets.flatten()
        ).item()
        accuracy = (scores.argmax(dim=-1) == targets).double().mean().item()
    return accuracy, loss


def train_retriever(
    scaled: bool,
    dim: int,
    n_keys: int,
    lr: float,
    seed: int,
    steps: int = 200,
    batch_size: int = 32,
    noise: float = 1.0,
    eval_every: int = 20,
    n_eval_sets: int = 20,
) -> dict:
    """Train one ``ProjectedDotScore`` with Adam on ``noisy_copy_task``.

    A step is one set of ``n_keys`` keys with ``batch_size`` queries. The
    initial weights and the training batches come from ``seed`` (the same
    for both arms); the validation and test sets, ``n_eval_sets`` sets of
    keys with 50 queries each, from ``VALIDATION_SEED`` and ``TEST_SEED``.
    Returns {"steps": [0, eval_every, ...], "val_accuracy",
    "test_accuracy", "test_loss": one value per evaluated step}.
    """
    require_training(
        lr=lr, seed=seed, steps=steps, batch_size=batch_size,
        eval_every=eval_every,
    )  # fmt: skip
    if lr > 1:
        raise ValueError(f"lr must be at most 1 (Adam diverges), got {lr}")
    if not isinstance(scaled, bool):
        raise TypeError(f"scaled must be True or False, got {scaled!r:.20}")
    require_int("dim", dim)
    require_int("n_keys", n_keys, minimum=2)
    require_positive("noise", noise)
    task = {"n_keys": n_keys, "dim": dim, "noise": noise}
    require_int("n_eval_sets", n_eval_sets)
    validation, test = (
        noisy_copy_task(n_eval_sets, 50, **task, generator=seeded_generator(s))
        for s in (VALIDATION_SEED, TEST_SEED)
    )
    generator = seeded_generator(seed)
    model = ProjectedDotScore(dim, scaled, generator)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    run = {"steps": [], "val_accuracy": [], "test_accuracy": [],
           "test_loss": []}  # fmt: skip

    def record(step):
        run["steps"].append(step)
        run["val_accuracy"].append(evaluate(model, validation)[0])
        accuracy, loss = evaluate(model, test)
        run["test_accuracy"].append(accuracy)
        run["test_loss"].append(loss)

    record(0)
    for step in range(1, steps + 1):
        queries, keys, targets = noisy_copy_task(
            1, batch_size, **task, generator=generator
        )
        scores = model(queries, keys)[0]  # (batch_size, n_keys)
        loss = nn.functional.cross_entropy(scores, targets[0])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step % eval_every == 0:
            record(step)
    return run


SCALE_RECIPE = {
    "dims": [32, 128],
    "n_keys": [16, 256, 1024],
    "lrs": [0.0003, 0.001, 0.003, 0.01, 0.03],
    "seeds": [0, 1, 2, 3, 4],
    "train": {"steps": 150, "batch_size": 32, "noise": 1.0,
              "eval_every": 15, "n_eval_sets": 20},
}  # fmt: skip


def run_sweep(recipe: dict = SCALE_RECIPE, log=None) -> str:
    """The file ``shipped_scale_sweep`` reads, as JSON text: for every
    (dim, n_keys, scaled, lr), the curves of every seed (accuracies and
    losses rounded to 1e-6)."""
    _check_recipe(recipe, log)
    rows = []
    for dim in recipe["dims"]:
        for n_keys in recipe["n_keys"]:
            for scaled in (False, True):
                for lr in recipe["lrs"]:
                    runs = [
                        train_retriever(
                            scaled, dim, n_keys, lr, seed, **recipe["train"]
                        )
                        for seed in recipe["seeds"]
                    ]
                    row = {"dim": dim, "n_keys": n_keys, "scaled": scaled,
                           "lr": lr, "steps": runs[0]["steps"]}  # fmt: skip
                    for name in ("val_accuracy", "test_accuracy", "test_loss"):
                        row[name] = [
                            [round(x, 6) for x in run[name]] for run in runs
                        ]
                    rows.append(row)
                    if log is not None:
                        final = [run["test_accuracy"][-1] for run in runs]
                        log(f"{dim} {n_keys} {scaled} {lr}: {final}")
    result = {"recipe": recipe, "rows": rows}
    return json.dumps(result, indent=1) + "\n"


def _check_recipe(recipe, log) -> None:
    """recipe: a dict like ``SCALE_RECIPE`` (``ValueError``/``TypeError``
    naming what is missing or not a list)."""
    if not isinstance(recipe, dict):
        raise TypeError(
            f"recipe must be a dict like SCALE_RECIPE, got "
            f"{type(recipe).__name__}"
        )
    for key in ("dims", "n_keys", "lrs", "seeds"):
        if not isinstance(recipe.get(key), list) or not recipe[key]:
            raise ValueError(f"recipe[{key!r}] must be a non-empty list")
    if not isinstance(recipe.get("train"), dict):
        raise ValueError("recipe['train'] must be a dict of settings")
    if log is not None and not callable(log):
        raise TypeError("log must be callable (like print) or None")


def shipped_scale_sweep() -> dict:
    """The shipped sweep (``python -m attnbook.train.scale_training``):
    {"recipe": SCALE_RECIPE, "rows": one per (dim, n_keys, scaled, lr)},
    checked against ``SCALE_TRAINING_SHA256``."""
    return json.loads(read_pinned(SCALE_TRAINING_FILE, SCALE_TRAINING_SHA256))


def best_rows(sweep: dict, by: str = "area") -> dict:
    """For every (dim, n_keys, scaled), the row whose learning rate has the
    highest mean validation accuracy: over all evaluated steps (``by`` =
    "area", the area under its learning curves) or at the last step (``by``
    = "last"). The test set plays no part in the choice."""
    if not (isinstance(sweep, dict) and isinstance(sweep.get("rows"), list)):
        raise TypeError(
            "sweep must be the dict shipped_scale_sweep returns (with "
            f"'rows'), got {type(sweep).__name__}"
        )
    if by not in ("area", "last"):
        raise ValueError(f"by must be 'area' or 'last', got {by!r:.20}")
    best = {}
    for row in sweep["rows"]:
        key = (row["dim"], row["n_keys"], row["scaled"])
        runs = row["val_accuracy"]
        score = (
            sum(map(sum, runs)) if by == "area" else sum(r[-1] for r in runs)
        )
        if key not in best or score > best[key][0]:
            best[key] = (score, row)
    return {key: row for key, (_, row) in best.items()}
