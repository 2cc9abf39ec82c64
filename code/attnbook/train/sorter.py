"""Train the book's pretrained sorting pointer network and ship it with the
package.

    # train, evaluate, write attnbook/data/pointer_sorter.pt
    python -m attnbook.train.sorter
    python -m attnbook.train.sorter --check    # evaluate the shipped file only

The recipe is ``attnbook.tasks.sorting.TRAINING_RECIPE``: a fixed number of
steps, a fixed seed and one thread, so two runs on one machine give the same
weights bit for bit. The script prints (and does not store: the file must be
identical on every run) its wall time, CPU time and steps per second (the
machine may be shared: CPU time and steps/s are the fairer measure) and the
exact-match accuracy on 4,000 fresh sequences at n = 5, 10, 15, 20.
"""

import hashlib
import time
from pathlib import Path

import torch

from .._checks import require_int
from .._weights import weights_digest
from ..tasks.sorting import (
    TRAINING_RECIPE,
    load_sorter,
    pretrained_path,
    save_sorter,
    sorting_accuracy,
    train_sorter,
)
from ._results import training_arguments

EVAL_LENGTHS = (5, 10, 15, 20)
EVAL_SEQUENCES = 4000
EVAL_SEED = 1234


def evaluate(model, lengths=EVAL_LENGTHS) -> dict:
    """Exact-match accuracy (share of whole permutations right) at each
    evaluation length."""
    if not isinstance(lengths, (list, tuple, range)) or not lengths:
        raise TypeError(
            f"lengths must be a non-empty list of ints, got {lengths!r:.40}"
        )
    for n in lengths:
        require_int("each of lengths", n)
    return {
        n: sorting_accuracy(model, n, EVAL_SEQUENCES, seed=EVAL_SEED + n)
        for n in lengths
    }


def main(argv=None) -> None:
    train_and_save(
        argv, __doc__, TRAINING_RECIPE, "train.sorter", pretrained_path()
    )


def train_and_save(
    argv, doc, recipe, script, default_out, lengths=EVAL_LENGTHS
) -> None:
    """The command line of a sorting script: train ``train_sorter(**recipe)``
    with one thread, evaluate at ``lengths`` and save to ``default_out`` (or
    ``--out``); ``--check`` evaluates the saved file only."""
    args, recipe, command = training_arguments(argv, doc, recipe, script)
    torch.set_num_threads(1)

    if args.check:
        model, info = load_sorter(args.out or default_out)
        print("stored info:", info)
        accuracy = evaluate(model, lengths)
        print("digest", weights_digest(model), "| accuracy", accuracy)
        return

    print("recipe:", recipe, flush=True)
    wall, cpu = time.perf_counter(), time.process_time()
    model, losses = train_sorter(**recipe, progress=True, threads=1)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    steps = recipe["steps"]
    print(
        f"trained {steps} steps in {wall:.1f} s wall, {cpu:.1f} s CPU: "
        f"{steps / wall:.1f} steps/s wall, "
        f"{steps / cpu:.1f} steps/s CPU; mean loss of the last 100 steps "
        f"{sum(losses[-100:]) / len(losses[-100:]):.5f}"
    )
    accuracy = evaluate(model, lengths)
    print(
        "exact-match accuracy on",
        EVAL_SEQUENCES,
        "fresh sequences:",
        ", ".join(f"n={n}: {100 * a:.2f}%" for n, a in accuracy.items()),
    )
    info = {
        "recipe": recipe,
        "command": command,
        "torch": str(torch.__version__),
        "final_loss": sum(losses[-100:]) / len(losses[-100:]),
        "eval_sequences": EVAL_SEQUENCES,
        "eval_seed": EVAL_SEED,
        "accuracy": {str(n): a for n, a in accuracy.items()},
        "digest": weights_digest(model),
    }
    out = args.out or Path(str(default_out))
    out.parent.mkdir(parents=True, exist_ok=True)
    save_sorter(model, out, info)
    print(
        f"weights digest {info['digest']}; saved to {out} ("
        f"{out.stat().st_size / 1024:.0f} KiB)"
    )
    print(
        "SHA-256 of the file (pin it in attnbook/tasks/sorting.py when "
        "shipping it): "
        f"{hashlib.sha256(out.read_bytes()).hexdigest()}"
    )


if __name__ == "__main__":
    main()
