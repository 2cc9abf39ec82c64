"""Train chapter 2's retrievers with and without the 1/sqrt(d) and ship the
results.

    # two query/key sizes, three numbers of keys, five learning rates,
    # five seeds, both arms: a few minutes of one core (17 minutes of wall
    # time on a loaded 2-core machine)
    python -m attnbook.train.scale_training
    # into another file
    python -m attnbook.train.scale_training --out /tmp/x.json

The recipe is ``SCALE_RECIPE`` in ``attnbook.experiments.scale_training``,
run on one thread (float64, seeded generators), so the file does not depend
on the machine.
"""

import time

import torch

from ..experiments.scale_training import SCALE_TRAINING_FILE, run_sweep
from ._results import results_parser, write_pinned


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], SCALE_TRAINING_FILE)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    text = run_sweep(log=print)
    print(f"{time.perf_counter() - start:.0f} s")
    write_pinned(
        args.out,
        text,
        "SCALE_TRAINING_SHA256",
        "attnbook/experiments/scale_training.py",
    )


if __name__ == "__main__":
    main()
