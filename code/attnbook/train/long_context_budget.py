"""Chapter 15's lab with a longer budget for the sinusoid: the same task,
model and recipe as ``python -m attnbook.train.long_context`` but
``BUDGET_STEPS`` steps, for both seeds (seed 1 did not learn in 2,000).

    # writes attnbook/data/long_context_budget.json (about 4 min CPU)
    python -m attnbook.train.long_context_budget
    python -m attnbook.train.long_context_budget --out /tmp/budget.json

Float32 on one thread; the file stores no timing.
"""

import json
import time

import torch

from ..tasks.long_context import (
    BUDGET_FILE,
    BUDGET_STEPS,
    EVAL_BATCHES,
    EVAL_SEED,
    LENGTHS,
    SEEDS,
    TRAINING_RECIPE,
    accuracy_by_length,
    train_scheme,
)
from ._results import results_parser, write_pinned


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], BUDGET_FILE)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    recipe = {**TRAINING_RECIPE, "steps": BUDGET_STEPS}
    runs = []
    start = time.process_time()
    for seed in SEEDS:
        model, losses = train_scheme("sinusoidal", seed, **recipe)
        accuracy = accuracy_by_length(model)
        runs.append(
            {
                "scheme": "sinusoidal",
                "seed": seed,
                "final_loss": sum(losses[-100:]) / len(losses[-100:]),
                "accuracy": accuracy,
            }
        )
        print(
            f"sinusoidal seed {seed}: loss {runs[-1]['final_loss']:.3f}, "
            f"accuracy {accuracy} ({time.process_time() - start:.0f} s CPU)",
            flush=True,
        )
    results = {
        "command": "python -m attnbook.train.long_context_budget",
        "recipe": recipe,
        "seeds": list(SEEDS),
        "lengths": list(LENGTHS),
        "eval": {**EVAL_BATCHES, "seed": EVAL_SEED},
        "torch": str(torch.__version__),
        "runs": runs,
    }
    write_pinned(
        args.out,
        json.dumps(results, indent=1) + "\n",
        "LONG_CONTEXT_BUDGET_SHA256",
        "attnbook/tasks/long_context.py",
    )


if __name__ == "__main__":
    main()
