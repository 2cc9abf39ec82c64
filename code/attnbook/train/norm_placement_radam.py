"""Chapter 9's warm-up question: post-LN trained without warm-up with a
rectified Adam (RAdam) against Adam with and without warm-up, at matched
steps, batches, initial weights and seeds.

    # writes attnbook/data/norm_placement_radam.json (about 6 min CPU)
    python -m attnbook.train.norm_placement_radam
    python -m attnbook.train.norm_placement_radam --out /tmp/radam.json

Every run is ``norm_placement.train_placement`` (the sweep's recipe: 4
blocks, 250 steps of 64 sequences, linear decay to 0, held-out accuracy on
1,000 sequences none of which the run trained on), float32 on one thread;
only the optimizer and the warm-up change. The file stores no timing.
"""

import json
import time

import torch

from ..experiments.norm_placement import (
    RADAM_ARMS,
    RADAM_FILE,
    RADAM_LRS,
    RADAM_SEEDS,
    RADAM_SIZES,
    RADAM_STEPS,
    train_placement,
)
from ._results import results_parser, write_pinned


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], RADAM_FILE)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    runs = []
    start = time.process_time()
    for lr in RADAM_LRS:
        for optimizer, warmup in RADAM_ARMS:
            for seed in RADAM_SEEDS:
                result = train_placement(
                    "post-LN", lr, warmup, RADAM_STEPS, seed=seed,
                    optimizer=optimizer, **RADAM_SIZES,
                )  # fmt: skip
                runs.append(
                    {
                        "optimizer": optimizer,
                        "warmup": warmup,
                        "lr": lr,
                        "seed": seed,
                        "eval_loss": result["eval_loss"],
                        "eval_accuracy": result["eval_accuracy"],
                        "first_losses": result["loss"][:10],
                    }
                )
                print(
                    f"lr {lr:g} {optimizer} warm-up {warmup} seed {seed}: "
                    f"held-out accuracy {result['eval_accuracy']:.3f} "
                    f"({time.process_time() - start:.0f} s CPU)",
                    flush=True,
                )
    results = {
        "command": "python -m attnbook.train.norm_placement_radam",
        "placement": "post-LN",
        "steps": RADAM_STEPS,
        "sizes": RADAM_SIZES,
        "lrs": list(RADAM_LRS),
        "arms": [list(arm) for arm in RADAM_ARMS],
        "seeds": list(RADAM_SEEDS),
        "torch": str(torch.__version__),
        "runs": runs,
    }
    write_pinned(
        args.out,
        json.dumps(results, indent=1) + "\n",
        "NORM_PLACEMENT_RADAM_SHA256",
        "attnbook/experiments/norm_placement.py",
    )


if __name__ == "__main__":
    main()
