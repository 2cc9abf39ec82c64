"""Train chapter 18's recall lab and ship its accuracies.

    # every model x width x seed, one process at a time; writes
    # attnbook/data/recall.json
    python -m attnbook.train.recall
    # elsewhere (e.g. to compare digests), or a part of the grid
    python -m attnbook.train.recall --out /tmp/recall.json
    python -m attnbook.train.recall --only softmax linear --widths 32 \\
        --seeds 0 --out /tmp/part.json

Each run is ``run_model(name, width, seed)`` of ``attnbook.tasks.recall``
(``TRAINING_RECIPE`` on batches cycling through ``PAIRS``, then the
accuracy at every P on held-out sequences), float32 on one thread in its
own process, so the result does not depend on ``--jobs``. The file stores
no timing: two runs on one machine write the same bytes. The whole grid
(6 models x 3 widths x 3 seeds) takes about half an hour on one core.
"""

import json
import multiprocessing
import time

import torch

from ..tasks.recall import (
    EVAL_SEED,
    EVAL_SEQUENCES,
    MODEL_CONFIG,
    MODELS,
    PAIRS,
    RESULTS_FILE,
    SEEDS,
    TASK,
    TRAINING_RECIPE,
    WIDTHS,
    run_model,
)
from ._results import results_parser, write_pinned


def _run(job: tuple) -> dict:
    torch.set_num_threads(1)
    start = time.perf_counter()
    record = run_model(*job)
    accuracies = " ".join(
        f"{p}:{a:.3f}" for p, a in record["accuracy"].items()
    )
    print(
        f"{job[0]} width {job[1]} seed {job[2]}: "
        f"{time.perf_counter() - start:.0f} s wall, "
        f"{record.pop('cpu_seconds'):.0f} s CPU; final loss "
        f"{record['final_loss']:.3f}; accuracy {accuracies}",
        flush=True,
    )
    return record


def results_json(records: list, seeds, widths) -> str:
    """The shipped file's text: the settings and every run, sorted."""
    names = list(MODELS)
    records = sorted(
        records, key=lambda r: (names.index(r["model"]), r["width"], r["seed"])
    )
    results = {
        "command": "python -m attnbook.train.recall",
        "task": {**TASK, "pairs": list(PAIRS)},
        "models": {name: list(mixers) for name, mixers in MODELS.items()},
        "config": MODEL_CONFIG,
        "widths": list(widths),
        "recipe": TRAINING_RECIPE,
        "seeds": list(seeds),
        "eval": {"sequences": EVAL_SEQUENCES, "seed": EVAL_SEED},
        "torch": str(torch.__version__).split("+")[0],
        "runs": records,
    }
    return json.dumps(results, indent=1) + "\n"


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], RESULTS_FILE)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--only", nargs="+", choices=list(MODELS))
    parser.add_argument("--widths", nargs="+", type=int, default=WIDTHS)
    parser.add_argument("--seeds", nargs="+", type=int, default=SEEDS)
    args = parser.parse_args(argv)
    names = args.only or list(MODELS)
    jobs = [
        (name, width, seed)
        for seed in args.seeds
        for width in args.widths
        for name in names
    ]
    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        records = pool.map(_run, jobs, chunksize=1)
    print(f"all runs: {time.perf_counter() - start:.0f} s wall", flush=True)
    text = results_json(records, args.seeds, args.widths)
    write_pinned(args.out, text, "RECALL_SHA256", "attnbook/tasks/recall.py")


if __name__ == "__main__":
    main()
