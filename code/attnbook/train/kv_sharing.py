"""Retrain chapter 12's language model with fewer key-value heads and with
latent attention, and ship the held-out scores (chapter 13).

    # train every variant, two at a time, write attnbook/data/kv_sharing.json
    python -m attnbook.train.kv_sharing --jobs 2
    # some variants only, into another file
    python -m attnbook.train.kv_sharing --only mqa mla64 --out /tmp/x.json
    # the full seeded design (every arm x seeds 0, 1, 2), one process,
    # writes attnbook/data/kv_sharing_sweep.json (not shipped: about 16
    # minutes of one core per run; --seeds 1 2 for some seeds only); read it
    # with kv_sharing.sweep_summary
    python -m attnbook.train.kv_sharing --sweep

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
    SWEEP_ARMS,
    SWEEP_FILE,
    SWEEP_SEEDS,
    VARIANTS,
    results_json,
    run_sweep_arm,
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


def _run_sweep(out, seeds=SWEEP_SEEDS) -> None:
    """Every arm for every seed, seed by seed, on this thread; each record
    is also appended to ``out`` + ".partial" as it finishes."""
    import json
    from pathlib import Path

    torch.set_num_threads(1)
    partial = Path(str(out) + ".partial")
    records = []
    for seed in seeds:
        for arm in SWEEP_ARMS:
            start = time.perf_counter()
            record = run_sweep_arm(arm, seed)
            records.append(record)
            with partial.open("a") as f:
                f.write(json.dumps(record) + "\n")
            print(
                f"{record['name']}: {time.perf_counter() - start:.0f} s, "
                f"held-out {record['held_out_bits_per_char']:.3f} bits/char",
                flush=True,
            )
    text = results_json(records)
    write_pinned(out, text, "SWEEP_SHA256", "your copy of the results")


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], KV_SHARING_FILE)
    parser.add_argument("--only", nargs="+", choices=sorted(VARIANTS))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument(
        "--seeds", nargs="+", type=int, default=list(SWEEP_SEEDS)
    )
    args = parser.parse_args(argv)
    if args.sweep:
        if args.out.name == KV_SHARING_FILE:
            args.out = args.out.with_name(SWEEP_FILE)
        _run_sweep(args.out, args.seeds)
        return
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
