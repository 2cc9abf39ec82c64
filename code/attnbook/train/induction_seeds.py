"""Train chapter 14's induction models with four more seeds, for the table
that shows the phase change is not one seed's accident.

    # train seeds 1-4, write attnbook/data/induction_seeds.pt
    python -m attnbook.train.induction_seeds
    # train elsewhere (e.g. to compare digests)
    python -m attnbook.train.induction_seeds --out /tmp/seeds.pt

Each seed is ``train_induction(num_layers, **TRAINING_RECIPE, seed=s)`` for
2 layers and for the 1-layer control, exactly the recipe of
``attnbook.train.induction`` (whose file holds seed 0): float32, one thread,
fixed seeds and steps, so two runs on one machine write the same file.
About 11 minutes of CPU on one core. It stores the final weights and the
per-step losses of every run, and no timing.
"""

import argparse
import hashlib
import time
from pathlib import Path

import torch

from .._weights import weights_digest
from ..tasks.induction import (
    INDUCTION_SEEDS_FILE,
    MODEL_CONFIG,
    SEEDS,
    TASK,
    TRAINING_RECIPE,
    train_induction,
)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = (
        args.out
        or Path(__file__).resolve().parents[1] / "data" / INDUCTION_SEEDS_FILE
    )
    torch.set_num_threads(1)
    recipe = {k: v for k, v in TRAINING_RECIPE.items() if k != "seed"}
    runs, cpu = {}, time.process_time()
    for seed in SEEDS:
        for layers in (2, 1):
            model, history, _ = train_induction(layers, **recipe, seed=seed)
            losses = history["loss"]
            means = " ".join(
                f"{sum(losses[i : i + 100]) / 100:.2f}"
                for i in range(0, 800, 100)
            )
            print(
                f"seed {seed}, {layers} layer(s): mean loss per 100 steps "
                f"to 800: {means}; last 100: {sum(losses[-100:]) / 100:.3f}"
                f"; digest {weights_digest(model)}",
                flush=True,
            )
            runs[(seed, layers)] = (
                {k: t.detach().clone() for k, t in model.state_dict().items()},
                torch.tensor(losses, dtype=torch.float32),
            )
    print(f"{len(runs)} runs in {time.process_time() - cpu:.0f} s CPU")
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "recipe": recipe,
            "seeds": SEEDS,
            "task": TASK,
            "config": MODEL_CONFIG,
            "two_layer": {s: runs[(s, 2)][0] for s in SEEDS},
            "one_layer": {s: runs[(s, 1)][0] for s in SEEDS},
            "losses": {
                "two_layer": {s: runs[(s, 2)][1] for s in SEEDS},
                "one_layer": {s: runs[(s, 1)][1] for s in SEEDS},
            },
            "torch": str(torch.__version__),
        },
        out,
    )
    print(
        f"saved {out} ({out.stat().st_size / 1024:.0f} KiB); SHA-256 (pin it "
        "as INDUCTION_SEEDS_SHA256 in attnbook/tasks/induction.py): "
        f"{hashlib.sha256(out.read_bytes()).hexdigest()}"
    )


if __name__ == "__main__":
    main()
