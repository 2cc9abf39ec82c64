"""Train chapter 3's hard-attention selectors and ship the results.

    # every method at every learning rate, ten seeds: about two minutes
    python -m attnbook.train.hard_selectors
    # into another file
    python -m attnbook.train.hard_selectors --out /tmp/x.json

The recipe is ``SWEEP_RECIPE`` in ``attnbook.experiments.hard_training``:
``compare_selectors`` over the four methods, then REINFORCE without a
baseline, on one thread (float64, seeded generators), so the file does not
depend on the machine.
"""

import time

import torch

from ..experiments.hard_training import HARD_SELECTORS_FILE, run_sweep
from ._results import results_parser, write_pinned


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], HARD_SELECTORS_FILE)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    text = run_sweep()
    print(f"{time.perf_counter() - start:.0f} s")
    write_pinned(
        args.out,
        text,
        "HARD_SELECTORS_SHA256",
        "attnbook/experiments/hard_training.py",
    )


if __name__ == "__main__":
    main()
