"""Train the card-lookup layer with 1 to 32 heads at a fixed width, several
seeds, and ship the measurements (chapter 4).

    # the whole sweep, write attnbook/data/card_head_sweep.json
    python -m attnbook.train.card_heads
    # into another file (e.g. to compare digests)
    python -m attnbook.train.card_heads --out /tmp/sweep.json

Each run is ``attnbook.experiments.head_count.run_head_count(h, seed)`` for
h in HEAD_COUNTS and seed in SEEDS, on one thread: about two seconds each,
a minute or two in all. Two runs on one machine write the same file.
"""

import time

import torch

from ..experiments.head_count import (
    HEAD_COUNTS,
    HEAD_SWEEP_FILE,
    SEEDS,
    run_head_count,
    sweep_json,
)
from ._results import results_parser, write_pinned


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], HEAD_SWEEP_FILE)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    records = []
    for num_heads in HEAD_COUNTS:
        for seed in SEEDS:
            start = time.perf_counter()
            record = run_head_count(num_heads, seed)
            worst = min(a[0] for a in record["ablated"])
            print(
                f"h = {num_heads:2}, seed {seed}: digit "
                f"{100 * record['digit_accuracy']:5.1f}%, colour "
                f"{100 * record['colour_accuracy']:5.1f}%; worst head "
                f"removed: digit {100 * worst:5.1f}% "
                f"({time.perf_counter() - start:.1f} s)",
                flush=True,
            )
            records.append(record)
    text = sweep_json(records)
    write_pinned(
        args.out,
        text,
        "HEAD_SWEEP_SHA256",
        "attnbook/experiments/head_count.py",
    )


if __name__ == "__main__":
    main()
