"""Chapter 6's baseline, hardened: the fixed-vocabulary ``PositionClassifier``
and the pointer network over three seeds, the baseline at a third of the
learning rate, and the baseline given each input's position index.

    # writes attnbook/data/baseline_seeds.json (about 18 min CPU)
    python -m attnbook.train.baseline_seeds
    python -m attnbook.train.baseline_seeds --out /tmp/seeds.json

Seed 0 of each model is the shipped file (``pretrained_position_classifier``,
``pretrained_sorter``), evaluated, not retrained. Every other run is
``train_sorter`` with the shipped recipe (``BASELINE_RECIPE`` or
``TRAINING_RECIPE``) on one thread, and only what its name says changes:
the seed (1 and 2); the learning rate, whole schedule divided by 3 (``lr``
and ``final_lr``, seed 0); or, seed 0 again, a learned embedding of the
position index 1..10 added to every input before the encoder
(``IndexedPositionClassifier``). Every run is scored as chapter 6 scores
the shipped models: exact match on 1,000 lists per length n drawn from
``torch.Generator().manual_seed(500 + n)``; the file stores the number of
lists sorted right, and no timing.
"""

import json
import time

import torch
from torch import nn

from .._checks import require_int, require_training
from .._memory import require_weights_fit
from .._random import restores_rng_on_error, seeded, seeded_generator
from .._weights import weights_digest
from ..measure.threads import torch_threads
from ..nn.pointer import (
    PointerNetwork,
    PositionClassifier,
    check_pointer_inputs,
)
from ..tasks.sorting import (
    BASELINE_RECIPE,
    BASELINE_SEEDS_FILE,
    SEEDS_TEST_LISTS,
    SEEDS_TEST_SEED,
    TRAINING_RECIPE,
    pretrained_position_classifier,
    pretrained_sorter,
    sorting_accuracy,
    sorting_batch,
    teacher_forced_training,
    train_sorter,
)
from ._results import results_parser, write_pinned

# the chapter's test lengths; the baseline's stop at its 10 classes
POINTER_LENGTHS = (2, 5, 10, 15, 20, 30, 40, 50)
BASELINE_LENGTHS = (2, 5, 10)
EXTRA_SEEDS = (1, 2)
LR_FACTOR = 3


class IndexedPositionClassifier(PositionClassifier):
    """A ``PositionClassifier`` told where each number sits: a learned
    embedding of its position index (one vector per class) is added to the
    embedded number before the encoder, so the encoder states, and the
    context vector that averages them, carry the index directly."""

    @restores_rng_on_error
    def __init__(self, hidden_dim: int = 64, max_positions: int = 10):
        require_int("hidden_dim", hidden_dim)
        require_int("max_positions", max_positions)
        # the pointer layers, the classes and the index embedding
        require_weights_fit(
            f"IndexedPositionClassifier(hidden_dim={hidden_dim}, "
            f"max_positions={max_positions})",
            (20 * hidden_dim, hidden_dim),
            (3 * hidden_dim + 1, max_positions),
        )
        super().__init__(hidden_dim, max_positions)
        self.where = nn.Embedding(max_positions, hidden_dim)

    def encode(self, x: torch.Tensor):
        check_pointer_inputs(self, x)
        n = x.shape[-1]
        if n > self.max_positions:
            raise ValueError(
                f"an IndexedPositionClassifier with {self.max_positions} "
                f"positions cannot encode a list of {n}"
            )
        inputs = self.embed(x.unsqueeze(-1)) + self.where.weight[:n]
        return self.encoder(inputs)


def train_indexed(recipe: dict):
    """``train_sorter(**recipe)`` with an ``IndexedPositionClassifier``:
    the same seeding, batches and loop; ``recipe`` has the keys of
    ``BASELINE_RECIPE``. Returns (model in eval mode, losses)."""
    if not isinstance(recipe, dict) or set(recipe) != set(BASELINE_RECIPE):
        raise ValueError(
            "recipe must be a dict with the keys of BASELINE_RECIPE ("
            f"{', '.join(BASELINE_RECIPE)}), got {recipe!r:.60}"
        )
    recipe = dict(recipe)
    require_training(
        steps=recipe["steps"], batch_size=recipe["batch_size"],
        lr=recipe["lr"], seed=recipe["seed"],
    )  # fmt: skip
    require_int("recipe['min_len']", recipe["min_len"])
    require_int("recipe['max_len']", recipe["max_len"])
    require_int(
        "recipe['max_positions']", recipe["max_positions"],
        minimum=recipe["max_len"],
    )  # fmt: skip
    seed, classes = recipe.pop("seed"), recipe.pop("max_positions")
    with torch_threads(1), seeded(seed):
        model = IndexedPositionClassifier(recipe["hidden_dim"], classes)
        losses = teacher_forced_training(
            model, sorting_batch, seeded_generator(seed),
            steps=recipe["steps"], batch_size=recipe["batch_size"],
            lengths=(recipe["min_len"], recipe["max_len"]), lr=recipe["lr"],
            final_lr=recipe["final_lr"],
        )  # fmt: skip
    return model.eval(), losses


def lists_sorted(model, lengths) -> dict:
    """{n: how many of chapter 6's 1,000 test lists of length n the model
    sorts exactly (greedy decoding)}, n a string."""
    if not isinstance(model, PointerNetwork):
        raise TypeError(
            f"model must be a PointerNetwork, got {type(model).__name__}"
        )
    if not isinstance(lengths, (tuple, list)) or not lengths:
        raise TypeError(
            f"lengths must be a non-empty list of ints, got {lengths!r:.40}"
        )
    limit = getattr(model, "max_positions", 100)
    for i, n in enumerate(lengths):
        require_int(f"lengths[{i}]", n)
        if n > limit:
            raise ValueError(
                f"lengths[{i}] = {n} is above {limit} (the model's classes, "
                "or the chapter's scale for a pointer network)"
            )
    right = {}
    for n in lengths:  # one batch of all the lists, as the chapter draws them
        share = sorting_accuracy(
            model, n, SEEDS_TEST_LISTS, SEEDS_TEST_SEED + n, SEEDS_TEST_LISTS
        )
        right[str(n)] = round(share * SEEDS_TEST_LISTS)
    return right


def _runs(steps: int | None):
    """(name, model, recipe, train) of every run; train is None for the
    shipped files, else a function of the recipe -> (model, losses)."""
    baseline, pointer = dict(BASELINE_RECIPE), dict(TRAINING_RECIPE)
    yield "baseline", "position classes", dict(baseline), None
    shipped_pointer = dict(pointer)
    if steps is not None:
        baseline["steps"] = pointer["steps"] = steps
    plain = lambda r: train_sorter(**r, threads=1)  # noqa: E731
    for seed in EXTRA_SEEDS:
        yield "baseline", "position classes", {**baseline, "seed": seed}, plain
    slower = {
        "lr": baseline["lr"] / LR_FACTOR,
        "final_lr": baseline["final_lr"] / LR_FACTOR,
    }
    yield "baseline lr/3", "position classes", {**baseline, **slower}, plain
    yield (
        "baseline + index", "indexed position classes", baseline,
        train_indexed,
    )  # fmt: skip
    yield "pointer", "pointer", shipped_pointer, None
    for seed in EXTRA_SEEDS:
        yield "pointer", "pointer", {**pointer, "seed": seed}, plain


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], BASELINE_SEEDS_FILE)
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="shorten every training (a smoke test; default: the recipe's)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    runs = []
    for name, kind, recipe, train in _runs(args.steps):
        start = time.process_time()
        if train is None:
            shipped = kind == "pointer"
            model = pretrained_sorter() if shipped else (
                pretrained_position_classifier()
            )  # fmt: skip
            final_loss = None
        else:
            model, losses = train(recipe)
            final_loss = sum(losses[-100:]) / len(losses[-100:])
        lengths = POINTER_LENGTHS if kind == "pointer" else BASELINE_LENGTHS
        right = lists_sorted(model, lengths)
        runs.append(
            {
                "name": name,
                "model": kind,
                "shipped": train is None,
                "seed": recipe["seed"],
                "recipe": recipe,
                "final_loss": final_loss,
                "digest": weights_digest(model),
                "sorted": right,
            }
        )
        print(
            f"{name:16} seed {recipe['seed']} lr {recipe['lr']:.2e}: "
            + ", ".join(f"n={n} {k}" for n, k in right.items())
            + f" of {SEEDS_TEST_LISTS} ({time.process_time() - start:.0f} s"
            " CPU)",
            flush=True,
        )
    command = "python -m attnbook.train.baseline_seeds"
    if args.steps is not None:
        command += f" --steps {args.steps}"
    results = {
        "command": command,
        "torch": str(torch.__version__),
        "test_lists": SEEDS_TEST_LISTS,
        "test_seed": f"{SEEDS_TEST_SEED} + n",
        "runs": runs,
    }
    write_pinned(
        args.out,
        json.dumps(results, indent=1) + "\n",
        "BASELINE_SEEDS_SHA256",
        "attnbook/tasks/sorting.py",
    )


if __name__ == "__main__":
    main()
