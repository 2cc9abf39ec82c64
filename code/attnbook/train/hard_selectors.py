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

import argparse
import hashlib
import time
from pathlib import Path

import torch

from ..experiments.hard_training import HARD_SELECTORS_FILE, run_sweep


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parents[1]
        / "data"
        / HARD_SELECTORS_FILE,
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    text = run_sweep()
    args.out.write_text(text)
    print(
        f"{time.perf_counter() - start:.0f} s; wrote {args.out}; SHA-256 "
        "(pin it as HARD_SELECTORS_SHA256 in "
        "attnbook/experiments/hard_training.py): "
        f"{hashlib.sha256(text.encode()).hexdigest()}"
    )


if __name__ == "__main__":
    main()
