"""Score chapter 5's bottleneck models over three training seeds, plus the
plain model trained twice as long, and ship the accuracies (results only).

    # writes attnbook/data/bottleneck_seeds.json (about 14 min CPU)
    python -m attnbook.train.bottleneck_seeds
    python -m attnbook.train.bottleneck_seeds --out /tmp/seeds.json

Seed 0 at 1,200 steps is the shipped pair (``bottleneck_models.pt``): its
weights are scored, not retrained. Seeds 1 and 2 of both models, and seeds
0-2 of the plain model at 2,400 steps, are trained with
``tasks.copying.train_bottleneck_model`` on one thread, so two runs on one
machine write the same file (compare the printed SHA-256). No weights are
written, and the file stores no timing; every run's weights digest is.
"""

import time

import torch

from ..experiments.bottleneck_seeds import (
    BOTTLENECK_SEEDS_FILE,
    EVAL_STRINGS,
    RUNS,
    results_json,
    run,
)
from ._results import results_parser, write_pinned


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], BOTTLENECK_SEEDS_FILE)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    records = []
    for name, seed, steps in RUNS:
        wall, cpu = time.perf_counter(), time.process_time()
        record = run(name, seed, steps, log_every=400)
        records.append(record)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(
            f"{name:9} seed {seed}, {steps} steps ({record['weights']}): "
            f"wall {wall:.0f} s, CPU {cpu:.0f} s; copied of "
            f"{EVAL_STRINGS}: {record['copied']}",
            flush=True,
        )
    write_pinned(
        args.out,
        results_json(records),
        "BOTTLENECK_SEEDS_SHA256",
        "attnbook/experiments/bottleneck_seeds.py",
    )


if __name__ == "__main__":
    main()
