"""Train the [CLS] classifier of chapter 9 ("does A come before B?") and ship
it with the package.

    # train, evaluate, write attnbook/data/order_classifier.pt
    python -m attnbook.train.order_classifier
    # evaluate the shipped file only
    python -m attnbook.train.order_classifier --check
    # train elsewhere (e.g. to compare digests)
    python -m attnbook.train.order_classifier --out /tmp/c.pt

The run is
``train_order_classifier(**attnbook.tasks.order_classifier.TRAINING_RECIPE)``:
float64, one thread, a fixed seed, so two runs on one machine write the same
file bit for bit. On another CPU the weights end about 1e-4 away (training
amplifies rounding differences), which is why the chapter loads this file. The
script prints the accuracy on 2,000 held-out sequences (none of them in
training) and its time, and stores no timing.
"""

import hashlib
import time
from pathlib import Path

import torch

from .._checks import require_saved
from .._weights import weights_digest
from ..tasks.order_classifier import (
    ORDER_CLASSIFIER_FILE,
    TRAINING_RECIPE,
    accuracy,
    classifier_from,
    held_out_batch,
    train_order_classifier,
    training_sequences,
)
from ._results import training_arguments

HELD_OUT_SEED = 123  # the chapter's held-out set: 2,000 sequences, seed 123


def held_out_accuracy(model, recipe=TRAINING_RECIPE) -> float:
    """Accuracy on the chapter's held-out set: 2,000 sequences drawn with
    seed 123, none of them in the recipe's training stream."""
    require_saved("recipe", recipe, "steps", "batch_size", "seed", "max_len")
    seen = training_sequences(
        recipe["steps"],
        recipe["batch_size"],
        recipe["seed"],
        recipe["max_len"],
    )
    generator = torch.Generator().manual_seed(HELD_OUT_SEED)
    return accuracy(model, *held_out_batch(2000, seen, generator=generator))


def main(argv=None) -> None:
    args, recipe, command = training_arguments(
        argv, __doc__, TRAINING_RECIPE, "train.order_classifier"
    )
    out = (
        args.out
        or Path(__file__).resolve().parents[1] / "data" / ORDER_CLASSIFIER_FILE
    )
    torch.set_num_threads(1)

    if args.check:
        saved = torch.load(out, weights_only=True)
        model, _ = classifier_from(saved)
        print(
            "recipe:",
            saved["recipe"],
            "| digest",
            weights_digest(model),
            f"| held-out accuracy "
            f"{held_out_accuracy(model, saved['recipe']):.2%}",
        )
        return

    wall, cpu = time.perf_counter(), time.process_time()
    model, history = train_order_classifier(**recipe, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{command}: trained in {wall:.1f} s wall, {cpu:.1f} s CPU; "
        f"held-out accuracy {held_out_accuracy(model):.2%}; weights digest "
        f"{weights_digest(model)}"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "recipe": recipe,
            "state_dict": model.state_dict(),
            "losses": torch.tensor(history["loss"], dtype=torch.float64),
            "torch": str(torch.__version__),
        },
        out,
    )
    print(
        f"saved {out} ({out.stat().st_size / 1024:.0f} KiB); SHA-256 (pin it "
        "as ORDER_CLASSIFIER_SHA256 in "
        "attnbook/tasks/order_classifier.py when shipping it): "
        f"{hashlib.sha256(out.read_bytes()).hexdigest()}"
    )


if __name__ == "__main__":
    main()
