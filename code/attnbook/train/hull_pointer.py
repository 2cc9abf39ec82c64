"""Train chapter 6's convex hull pointer network and ship it with the
package.

    # train, evaluate, write attnbook/data/hull_pointer.pt
    python -m attnbook.train.hull_pointer
    python -m attnbook.train.hull_pointer --check

The recipe is ``attnbook.tasks.convex_hull.TRAINING_RECIPE`` (sets of 5 to
10 points, one thread, a fixed seed: two runs on one machine give the same
file). The script prints its wall and CPU time and the exact-match accuracy
on 1,000 fresh point sets at n = 5, 10, 15, 20.
"""

import hashlib
import time

import torch

from .._weights import weights_digest
from ..tasks.convex_hull import (
    PRETRAINED_FILE,
    TRAINING_RECIPE,
    hull_accuracy,
    load_hull_pointer,
    save_hull_pointer,
    train_hull_pointer,
)
from ._results import DATA, training_arguments

EVAL_LENGTHS = (5, 10, 15, 20)
EVAL_SETS = 1000
EVAL_SEED = 4321


def evaluate(model) -> dict:
    """Exact-match accuracy of the whole closed hull at each length."""
    return {
        n: hull_accuracy(model, n, EVAL_SETS, seed=EVAL_SEED + n)
        for n in EVAL_LENGTHS
    }


def main(argv=None) -> None:
    args, recipe, command = training_arguments(
        argv, __doc__, TRAINING_RECIPE, "train.hull_pointer"
    )
    torch.set_num_threads(1)
    out = args.out or DATA / PRETRAINED_FILE
    if args.check:
        model, info = load_hull_pointer(out)
        print("stored info:", info)
        print("digest", weights_digest(model), "| accuracy", evaluate(model))
        return
    print("recipe:", recipe, flush=True)
    wall, cpu = time.perf_counter(), time.process_time()
    model, losses = train_hull_pointer(**recipe, progress=True, threads=1)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    final = sum(losses[-100:]) / len(losses[-100:])
    print(
        f"trained {recipe['steps']} steps in {wall:.1f} s wall, {cpu:.1f} s "
        f"CPU; mean loss of the last 100 steps {final:.5f}"
    )
    accuracy = evaluate(model)
    print(
        "exact-match accuracy:",
        ", ".join(f"n={n}: {100 * a:.1f}%" for n, a in accuracy.items()),
    )
    info = {
        "recipe": recipe,
        "command": command,
        "torch": str(torch.__version__),
        "final_loss": final,
        "eval_sets": EVAL_SETS,
        "eval_seed": EVAL_SEED,
        "accuracy": {str(n): a for n, a in accuracy.items()},
        "digest": weights_digest(model),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    save_hull_pointer(model, out, info)
    print(
        "SHA-256 of the file (pin it as HULL_POINTER_SHA256 in "
        "attnbook/tasks/convex_hull.py): "
        f"{hashlib.sha256(out.read_bytes()).hexdigest()}"
    )


if __name__ == "__main__":
    main()
