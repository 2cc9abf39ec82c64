"""Train chapter 18's recall lab and ship its accuracies.

    # every run of shipped_runs(), one process at a time; writes
    # attnbook/data/recall.json
    python -m attnbook.train.recall
    # elsewhere (e.g. to compare digests), or a part of the grid
    python -m attnbook.train.recall --out /tmp/recall.json
    python -m attnbook.train.recall --only softmax linear --seeds 0 \\
        --out /tmp/part.json

Each run is ``run_model(name, key_dim, seed)`` of ``attnbook.tasks.recall``
(``TRAINING_RECIPE`` on batches cycling through ``PAIRS``, a learning curve
at the largest P, then the accuracy at every P on held-out sequences),
float32 on one thread in its own process, so the result does not depend on
``--jobs`` (the file is rewritten after every run with the runs done so
far, and pinned when all are). The grid is ``shipped_runs()``: six models
at the default key_dim and linear attention at two smaller ones, three
seeds each (24 runs, about 10 minutes of CPU time; with ``--jobs 4`` on a
2-core machine shared with other work, about 25 minutes). The file stores
no timing: two runs on one machine write the same bytes.
"""

import json
import multiprocessing
import time

import torch

from .._checks import require_saved
from ..tasks.recall import (
    CURVE_EVERY,
    EVAL_SEED,
    EVAL_SEQUENCES,
    KEY_DIMS,
    MODEL_CONFIG,
    MODELS,
    PAIRS,
    RESULTS_FILE,
    STATE_SWEEP,
    TASK,
    TRAINING_RECIPE,
    run_model,
    shipped_runs,
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
        f"{job[0]} key_dim {job[1]} seed {job[2]}: "
        f"{time.perf_counter() - start:.0f} s wall, "
        f"{record.pop('cpu_seconds'):.0f} s CPU; final loss "
        f"{record['final_loss']:.3f}; accuracy {accuracies}",
        flush=True,
    )
    return record


def results_json(records: list) -> str:
    """The shipped file's text: the settings and every run, sorted."""
    if not isinstance(records, (list, tuple)):
        raise TypeError(f"records must be a list of runs, got {records!r:.40}")
    for record in records:
        require_saved("each of records", record, "model", "key_dim", "seed")
    names = list(MODELS)
    records = sorted(
        records,
        key=lambda r: (names.index(r["model"]), -r["key_dim"], r["seed"]),
    )
    results = {
        "command": "python -m attnbook.train.recall",
        "task": {**TASK, "pairs": list(PAIRS)},
        "models": {name: list(mixers) for name, mixers in MODELS.items()},
        "config": MODEL_CONFIG,
        "key_dims": list(KEY_DIMS),
        "state_sweep": list(STATE_SWEEP),
        "recipe": TRAINING_RECIPE,
        "seeds": sorted({r["seed"] for r in records}),
        "eval": {"sequences": EVAL_SEQUENCES, "seed": EVAL_SEED},
        "curve_every": CURVE_EVERY,
        "torch": str(torch.__version__).split("+")[0],
        "runs": records,
    }
    return json.dumps(results, indent=1) + "\n"


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], RESULTS_FILE)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--only", nargs="+", choices=list(MODELS))
    parser.add_argument("--seeds", nargs="+", type=int)
    args = parser.parse_args(argv)
    jobs = [
        (name, key_dim, seed)
        for name, key_dim, seed in shipped_runs()
        if (args.only is None or name in args.only)
        and (args.seeds is None or seed in args.seeds)
    ]
    start = time.perf_counter()
    records = []
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        for record in pool.imap_unordered(_run, jobs, chunksize=1):
            records.append(record)
            if len(records) < len(jobs):  # what is done so far, unpinned
                args.out.write_text(results_json(records))
    print(f"all runs: {time.perf_counter() - start:.0f} s wall", flush=True)
    text = results_json(records)
    write_pinned(args.out, text, "RECALL_SHA256", "attnbook/tasks/recall.py")


if __name__ == "__main__":
    main()
