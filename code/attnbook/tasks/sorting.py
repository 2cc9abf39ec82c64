"""Chapter 6's task: sorting numbers with a pointer network; the trained
sorter ships as pinned weights (``python -m attnbook.train.sorter``)."""

import io
import json
from importlib import resources
from pathlib import Path

import torch
from torch import nn

from .._checks import (
    all_finite,
    require_finite_number,
    require_int,
    require_positive,
    require_training,
)
from .._memory import require_matrix_fits, require_weights_fit
from .._random import (
    keep_global_rng,
    require_generator,
    seeded,
    seeded_generator,
)
from .._weights import load_pinned, read_pinned
from ..measure.threads import torch_threads
from ..nn.pointer import PointerNetwork, PositionClassifier, check_values
from ._saved_models import check_saving, read_saved

PRETRAINED_FILE = "pointer_sorter.pt"
# SHA-256 of the shipped attnbook/data/pointer_sorter.pt; pretrained_sorter()
# refuses any other bytes. After retraining (python -m attnbook.train.sorter),
# pin the new file's digest here
# (`sha256sum code/attnbook/data/pointer_sorter.pt`).
POINTER_SORTER_SHA256 = (
    "5251acb846b8a95e40c9c56b681eb50a220f1623b4715718e9495ebfee460699"
)

# The recipe of the book's pretrained sorter
# (``python -m attnbook.train.sorter``).
TRAINING_RECIPE = {
    "hidden_dim": 64,
    "steps": 12_000,
    "batch_size": 64,
    "min_len": 5,
    "max_len": 10,
    "lr": 1e-2,
    "final_lr": 1e-5,
    "seed": 0,
}

BASELINE_FILE = "position_classifier.pt"
# SHA-256 of the shipped attnbook/data/position_classifier.pt (python -m
# attnbook.train.position_classifier); pretrained_position_classifier()
# refuses any other bytes.
POSITION_CLASSIFIER_SHA256 = (
    "19bfaca63734dcc28c2d8673c3555db6371db37d00233dae53d70d2ce5486b67"
)

# The fixed-vocabulary baseline: the sorter's recipe, 10 position classes.
BASELINE_RECIPE = {**TRAINING_RECIPE, "max_positions": 10}

# python -m attnbook.train.baseline_seeds: the baseline and the sorter over
# seeds 0-2 (seed 0: the shipped files), the baseline at lr / 3 and given the
# position index, scored on chapter 6's test lists (1,000 lists of each
# length n, drawn from torch.Generator().manual_seed(500 + n)).
BASELINE_SEEDS_FILE = "baseline_seeds.json"
SEEDS_TEST_LISTS = 1000
SEEDS_TEST_SEED = 500
BASELINE_SEEDS_SHA256 = (
    "7a0c2002862c908320f59fd8956fc2eb291cebc2d14150ea202fc98ac6ddb90b"
)


def sorting_batch(batch_size: int, n: int, generator: torch.Generator):
    """A batch of the sorting task.

    Returns x: (batch_size, n) floats uniform in [0, 1) drawn with
    ``generator``, and target: (batch_size, n) int64, the positions of x
    from largest to smallest (``torch.argsort(x, dim=1, descending=True)``).
    """
    _check_batch(batch_size, n, generator)
    x = torch.rand(batch_size, n, generator=generator)
    return x, torch.argsort(x, dim=1, descending=True, stable=True)


def _check_batch(batch_size, n, generator) -> None:
    require_int("batch_size", batch_size)
    require_int("n", n)
    require_generator("generator", generator)
    require_matrix_fits(
        "the batch",
        (batch_size, n),
        torch.float32,
        hint="use a smaller one, or",
    )


def scale_to_unit(
    x: torch.Tensor, low: float = 0.1, high: float = 0.9
) -> torch.Tensor:
    """Map every row of x affinely onto [low, high], keeping the order of its
    entries.

    x: (B, n) finite floats. Row minimum -> low, row maximum -> high; a
    constant row -> (low + high) / 2. The sorter was trained on numbers in [0,
    1), so any input, e.g. 20, 5, 10, goes through this increasing map first:
    same order, familiar range.
    """
    check_values(x)
    big = torch.finfo(x.dtype).max / 4
    require_finite_number("low", low, low=-big, high=big)
    require_finite_number("high", high, low=low, high=big, include_low=False)
    smallest = x.min(dim=1, keepdim=True).values
    spread = x.max(dim=1, keepdim=True).values - smallest
    if not all_finite(
        spread
    ):  # e.g. -3e38 and 3e38 in float32: their gap overflows; map in float64
        return scale_to_unit(x.double(), low, high).to(x.dtype)
    unit = torch.where(
        spread > 0,
        (x - smallest) / spread.clamp_min(torch.finfo(x.dtype).tiny),
        0.5,
    )
    return low + (high - low) * unit


@torch.no_grad()
def sorting_accuracy(
    model: PointerNetwork,
    n: int,
    num_sequences: int = 4000,
    seed: int = 1234,
    batch_size: int = 1000,
) -> float:
    """Share of fresh sorting sequences of length n whose whole greedy output
    is right.

    Draws ``num_sequences`` sequences with
    ``torch.Generator().manual_seed(seed)`` (in chunks of ``batch_size``) and
    counts exact matches of the permutation.
    """
    if not isinstance(model, PointerNetwork):
        raise TypeError(
            f"model must be a PointerNetwork, got {type(model).__name__}"
        )
    require_int("n", n)
    require_int("num_sequences", num_sequences)
    require_int("seed", seed, minimum=0)
    require_int("batch_size", batch_size)
    require_matrix_fits(
        "the evaluation sequences",
        (num_sequences, n),
        torch.float32,
        "use fewer, or",
    )
    generator = seeded_generator(seed)
    correct, remaining = 0, num_sequences
    while remaining > 0:
        size = min(batch_size, remaining)
        x, target = sorting_batch(size, n, generator)
        correct += (model.decode(x) == target).all(dim=1).sum().item()
        remaining -= size
    return correct / num_sequences


def train_sorter(
    hidden_dim: int = 64,
    steps: int = 12_000,
    batch_size: int = 64,
    min_len: int = 5,
    max_len: int = 10,
    lr: float = 1e-2,
    final_lr: float = 1e-5,
    seed: int = 0,
    progress: bool = False,
    threads: int | None = 1,
    max_positions: int | None = None,
):
    """Train a ``PointerNetwork`` to sort with teacher forcing and
    cross-entropy.

    Every step draws one length n uniformly from [min_len, max_len] and a batch
    of ``batch_size`` sequences of that length. Adam; the learning rate decays
    exponentially from ``lr`` to ``final_lr`` over the ``steps`` steps.
    Everything is seeded by ``seed`` and, with ``threads`` fixed (default 1,
    restored after), bit-for-bit reproducible on a given machine.
    ``progress=True`` shows a tqdm bar. The defaults are the recipe of the
    book's pretrained sorter (``TRAINING_RECIPE``). With ``max_positions``
    the model is the fixed-vocabulary ``PositionClassifier`` with that many
    classes instead. Returns (model in eval mode, losses: list of the
    ``steps`` training losses).
    """
    require_training(steps=steps, batch_size=batch_size, lr=lr, seed=seed)
    require_positive("final_lr", final_lr)
    require_int("min_len", min_len)
    require_int("max_len", max_len)
    if not 1 <= min_len <= max_len:
        raise ValueError(
            f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len="
            f"{max_len}"
        )
    if max_positions is not None:
        require_int("max_positions", max_positions, minimum=max_len)
    # seeds its own stream (threads wait); the reader's is restored after
    with torch_threads(threads), seeded(seed):
        if max_positions is None:
            model = PointerNetwork(hidden_dim)
        else:
            model = PositionClassifier(hidden_dim, max_positions)
        generator = seeded_generator(seed)
        losses = teacher_forced_training(
            model, sorting_batch, generator, steps=steps,
            batch_size=batch_size, lengths=(min_len, max_len), lr=lr,
            final_lr=final_lr, progress=progress,
        )  # fmt: skip
    return model.eval(), losses


def teacher_forced_training(
    model, draw_batch, generator, *, steps, batch_size, lengths, lr,
    final_lr, progress=False,
) -> list:  # fmt: skip
    """The pointer networks' training loop (the sorter, the baseline, the
    convex hull): every step one n uniform in ``lengths`` (low, high), a
    batch ``draw_batch(batch_size, n, generator)`` -> (inputs, targets), the
    model's teacher-forced ``loss``; Adam with the learning rate decaying
    exponentially from ``lr`` to ``final_lr``, gradients clipped at norm 1.
    Returns the list of the ``steps`` training losses. Every draw uses
    ``generator`` (required: torch's global RNG is never touched)."""
    require_generator("generator", generator)
    require_training(steps=steps, batch_size=batch_size, lr=lr)
    require_positive("final_lr", final_lr)
    if not (
        isinstance(model, nn.Module) and callable(getattr(model, "loss", None))
    ):
        raise TypeError(
            "model must be a module with a loss(inputs, target) method "
            f"(a pointer network), got {type(model).__name__}"
        )
    if not callable(draw_batch):
        raise TypeError(
            "draw_batch must be a function (batch_size, n, generator) -> "
            f"(inputs, targets), got {type(draw_batch).__name__}"
        )
    if not (isinstance(lengths, (tuple, list)) and len(lengths) == 2):
        raise TypeError(
            f"lengths must be a (low, high) pair, got {lengths!r:.40}"
        )
    require_int("lengths[0]", lengths[0])
    require_int("lengths[1]", lengths[1], minimum=lengths[0])
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    decay = (final_lr / lr) ** (1.0 / max(steps - 1, 1))
    schedule = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=decay)
    iterator = range(steps)
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc="training", mininterval=0.5)
    losses = []
    model.train()
    low, high = lengths
    for _ in iterator:
        n = int(torch.randint(low, high + 1, (1,), generator=generator))
        inputs, target = draw_batch(batch_size, n, generator)
        loss = model.loss(inputs, target)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    return losses


def save_sorter(model: PointerNetwork, path, info: dict | None = None) -> None:
    """Save the weights, the size and a dict of facts (recipe, accuracies) to
    ``path``.

    Written through a buffer, so the bytes do not depend on the file's name
    (``torch.save`` to a path names the archive's inner folder after it): two
    runs give the same file.
    """
    check_saving(model, path, info, PointerNetwork)
    # Each tensor gets a storage of its own: a module's parameters may be views
    # of one shared storage, which torch.save would write whole, so the bytes
    # would depend on how they were made.
    state = {
        name: tensor.detach().clone()
        for name, tensor in model.state_dict().items()
    }
    saved = {
        "hidden_dim": model.hidden_dim,
        "state_dict": state,
        "info": dict(info or {}),
    }
    if isinstance(model, PositionClassifier):
        saved["max_positions"] = model.max_positions
    buffer = io.BytesIO()
    torch.save(saved, buffer)
    Path(path).write_bytes(buffer.getvalue())


def load_sorter(path):
    """Load a model saved by ``save_sorter``. Returns (model in eval mode,
    info dict)."""
    return _sorter_from(read_saved(path, "sorter", "save_sorter"))


def _sorter_from(saved: dict):
    """(model in eval mode, info) from the dict ``save_sorter`` writes;
    torch's global RNG is left as it was."""
    if (
        not isinstance(saved, dict)
        or not {"hidden_dim", "state_dict", "info"} <= saved.keys()
    ):
        raise ValueError(
            "the file does not hold a saved PointerNetwork (hidden_dim, "
            "state_dict, info)"
        )
    hidden_dim = require_int("the saved hidden_dim", saved["hidden_dim"])
    require_weights_fit("the saved sorter", (8 * hidden_dim, 4 * hidden_dim))
    # the module's initial weights are drawn, then overwritten
    with keep_global_rng():
        if "max_positions" in saved:
            classes = require_int(
                "the saved max_positions", saved["max_positions"]
            )
            model = PositionClassifier(hidden_dim, classes)
        else:
            model = PointerNetwork(hidden_dim)
    try:
        model.load_state_dict(saved["state_dict"])
    except (RuntimeError, TypeError, AttributeError) as error:
        raise ValueError(
            "the file's state_dict does not fit a PointerNetwork("
            f"{hidden_dim}): not written by save_sorter "
            f"({type(error).__name__})"
        ) from None
    return model.eval(), saved["info"]


def pretrained_path():
    """Where the book's pretrained sorter lives inside the package."""
    return resources.files("attnbook") / "data" / PRETRAINED_FILE


def pretrained_sorter(return_info: bool = False):
    """The book's trained sorting ``PointerNetwork`` (hidden size 64), in eval
    mode.

    With ``return_info=True`` also returns the dict saved with it: the training
    recipe and the accuracies it measured (no timings: the file is the same bit
    for bit on every run). The file's bytes are checked against
    ``POINTER_SORTER_SHA256`` first (a damaged, truncated or missing file
    raises a clear error); torch's global RNG is left as it was.
    """
    model, info = _sorter_from(
        load_pinned(PRETRAINED_FILE, POINTER_SORTER_SHA256)
    )
    return (model, info) if return_info else model


def pretrained_position_classifier(return_info: bool = False):
    """The book's trained fixed-vocabulary baseline (``PositionClassifier``,
    hidden size 64, 10 position classes), in eval mode; with
    ``return_info=True`` also the dict saved with it. Trained by
    ``python -m attnbook.train.position_classifier`` with the sorter's
    recipe; the file is checked against ``POSITION_CLASSIFIER_SHA256``."""
    model, info = _sorter_from(
        load_pinned(BASELINE_FILE, POSITION_CLASSIFIER_SHA256)
    )
    return (model, info) if return_info else model


def load_baseline_seeds() -> dict:
    """The shipped ``data/baseline_seeds.json`` of ``python -m
    attnbook.train.baseline_seeds`` (checked against its pinned SHA-256):
    {"runs": [{"name", "model", "shipped", "seed", "recipe", "final_loss",
    "digest", "sorted": {n: lists of 1,000 sorted exactly}}, ...],
    "test_lists", "test_seed", ...}. Runs named "baseline" and "pointer"
    are seeds 0, 1, 2 of the shipped recipes (seed 0 the shipped weights);
    "baseline lr/3" and "baseline + index" are seed 0."""
    return json.loads(read_pinned(BASELINE_SEEDS_FILE, BASELINE_SEEDS_SHA256))
