"""Train Bahdanau's and Luong's decoders side by side on the date task and
ship the held-out accuracies (chapter 5).

    # every decoder and seed, write attnbook/data/luong_bahdanau.json
    python -m attnbook.train.luong_bahdanau
    # into another file (e.g. to compare digests)
    python -m attnbook.train.luong_bahdanau --out /tmp/lb.json

The recipe (``attnbook.experiments.luong_bahdanau.RECIPE``) is fixed; every
run is on one thread, so two runs on one machine write the same file (compare
the printed SHA-256). Six runs of 600 steps take about ten minutes here.
"""

import time

import torch

from ..experiments.luong_bahdanau import (
    DECODERS,
    LUONG_BAHDANAU_FILE,
    RECIPE,
    held_out_dates,
    results_json,
    run,
)
from ._results import results_parser, write_pinned


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], LUONG_BAHDANAU_FILE)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    held_out = held_out_dates()
    records = []
    for seed in RECIPE["seeds"]:
        for name in DECODERS:
            start = time.perf_counter()
            record = run(name, seed, held_out)
            records.append(record)
            print(
                f"{name:10} seed {seed}: {record['parameters']:,} parameters,"
                f" exact match {record['exact_match']},"
                f" {time.perf_counter() - start:.0f} s",
                flush=True,
            )
    text = results_json(records)
    write_pinned(
        args.out,
        text,
        "LUONG_BAHDANAU_SHA256",
        "attnbook/experiments/luong_bahdanau.py",
    )


if __name__ == "__main__":
    main()
