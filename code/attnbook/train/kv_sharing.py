"""Retrain chapter 12's language model with fewer key-value heads and with
latent attention, and ship the held-out scores (chapter 13).

    # train every variant, two at a time, write attnbook/data/kv_sharing.json
    python -m attnbook.train.kv_sharing --jobs 2
    # some variants only, into another file
    python -m attnbook.train.kv_sharing --only mqa mla64 --out /tmp/x.json

Each variant is ``train_language_model(**TRAINING_RECIPE)`` with one config
change (``attnbook.experiments.kv_sharing.VARIANTS``), on one thread in its
own process, so the result does not depend on ``--jobs``. Each takes about as
long as the chapter 12 model (15 to 20 minutes here).
"""

import multiprocessing
import time

import torch

from ..experiments.kv_sharing import (
    KV_SHARING_FILE,
    VARIANTS,
    results_json,
    run_variant,
)
from ._results import results_parser, write_pinned


def _run(name: str) -> dict:
    torch.set_num_threads(1)
    start = time.perf_counter()
    record = run_variant(name)
    print(
        f"{name}: {time.perf_counter() - start:.0f} s wall, held-out "
        f"{record['held_out_bits_per_char']:.3f} bits/char, "
        f"{record['parameters']:,} parameters",
        flush=True,
    )
    return record


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], KV_SHARING_FILE)
    parser.add_argument("--only", nargs="+", choices=sorted(VARIANTS))
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    names = args.only or list(VARIANTS)
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        records = pool.map(_run, names, chunksize=1)
    text = results_json(records)
    write_pinned(
        args.out,
        text,
        "KV_SHARING_SHA256",
        "attnbook/experiments/kv_sharing.py",
    )


if __name__ == "__main__":
    main()
