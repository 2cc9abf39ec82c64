"""Train chapter 14's attention-only models on the induction task and ship
them with the package.

    # train both, evaluate, write attnbook/data/induction_models.pt
    python -m attnbook.train.induction
    # evaluate the shipped file only
    python -m attnbook.train.induction --check
    # train elsewhere (e.g. to compare digests)
    python -m attnbook.train.induction --out /tmp/induction.pt

The runs are ``train_induction(num_layers, **TRAINING_RECIPE)`` for 2
layers (kept at ``CHECKPOINTS``, dense around the phase change) and for 1
layer (the control, kept at the end): float32, one thread, fixed seeds and a
fixed number of steps, so two runs on one machine write the same file. It
prints the loss every 100 steps, the wall time and the loss of each model on
fresh random-offset batches, and stores no timing.
"""

import hashlib
import time
from pathlib import Path

import torch

from .._weights import weights_digest
from ..tasks.induction import (
    CHECKPOINTS,
    INDUCTION_FILE,
    MODEL_CONFIG,
    TASK,
    TRAINING_RECIPE,
    chance_loss,
    evaluate,
    models_from,
    train_induction,
)
from ._results import training_arguments


def report(two_layer, one_layer) -> dict:
    """Print and return the loss of both models on fresh batches."""
    losses = {
        f"{layers}-layer {offset}": evaluate(model, offset=offset)
        for layers, model in ((2, two_layer), (1, one_layer))
        for offset in ("random", "fixed")
    }
    print(
        "loss on the predictable tokens of fresh batches (chance "
        f"{chance_loss():.3f} nats): "
        + ", ".join(f"{name} {loss:.3f}" for name, loss in losses.items())
    )
    return losses


def main(argv=None) -> None:
    args, recipe, command = training_arguments(
        argv, __doc__, TRAINING_RECIPE, "train.induction"
    )
    out = (
        args.out
        or Path(__file__).resolve().parents[1] / "data" / INDUCTION_FILE
    )
    torch.set_num_threads(1)

    if args.check:
        saved = torch.load(out, weights_only=True)
        models = models_from(saved)
        final = models["two_layer"][max(models["two_layer"])]
        print("recipe:", saved["recipe"], "| digest", weights_digest(final))
        report(final, models["one_layer"])
        return

    steps = recipe["steps"]
    checkpoints = tuple(step for step in CHECKPOINTS if step <= steps)
    runs, wall, cpu = {}, time.perf_counter(), time.process_time()
    for layers in (2, 1):
        model, history, kept = train_induction(
            layers, **recipe, checkpoints=checkpoints
        )
        losses = history["loss"]
        print(
            f"{layers} layer(s), {history['seconds']:.1f} s; mean loss per "
            "100 steps:\n  "
            + " ".join(
                f"{sum(losses[i : i + 100]) / len(losses[i : i + 100]):.2f}"
                for i in range(0, steps, 100)
            )
        )
        runs[layers] = (model, losses, kept)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{command}: 2 x {steps} steps in {wall:.1f} s wall, {cpu:.1f} s "
        f"CPU; weights digest (2 layers) {weights_digest(runs[2][0])}"
    )
    report(runs[2][0], runs[1][0])
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "recipe": recipe,
            "task": TASK,
            "config": MODEL_CONFIG,
            "checkpoints": runs[2][2],
            "one_layer": runs[1][2][steps],
            "losses": {
                "two_layer": torch.tensor(runs[2][1], dtype=torch.float32),
                "one_layer": torch.tensor(runs[1][1], dtype=torch.float32),
            },
            "torch": str(torch.__version__),
        },
        out,
    )
    print(
        f"saved {out} ({out.stat().st_size / 1024:.0f} KiB); SHA-256 (pin it "
        "as INDUCTION_SHA256 in attnbook/tasks/induction.py when shipping "
        f"it): {hashlib.sha256(out.read_bytes()).hexdigest()}"
    )


if __name__ == "__main__":
    main()
