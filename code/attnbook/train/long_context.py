"""Train chapter 15's length-generalisation lab and ship its results.

    # every scheme x every seed, two processes at a time; writes
    # attnbook/data/long_context.json and long_context_models.pt
    python -m attnbook.train.long_context --jobs 2
    # elsewhere (e.g. to compare digests)
    python -m attnbook.train.long_context --jobs 2 --out-dir /tmp/lc
    # re-evaluate the shipped seed-0 models against the shipped accuracies
    python -m attnbook.train.long_context --check

Each run is ``run_scheme(scheme, seed)`` of ``attnbook.tasks.long_context``
(``TRAINING_RECIPE`` at n = 64, then accuracy at every length of
``LENGTHS`` on evaluation batches; the "rope" runs also with each RoPE
scaling at n = 512, without and with ``FINETUNE_RECIPE``), float32 on one
thread in its own process, so the result does not depend on ``--jobs``. The
files store no timing: two runs on one machine write the same bytes.
"""

import argparse
import hashlib
import json
import multiprocessing
import time
from pathlib import Path

import torch

from ..nn.position_schemes import SCHEMES
from ..tasks.long_context import (
    EVAL_BATCHES,
    EVAL_SEED,
    FINETUNE_RECIPE,
    LENGTHS,
    MODEL_CONFIG,
    MODELS_FILE,
    RESULTS_FILE,
    SEEDS,
    TASK,
    TRAINING_RECIPE,
    accuracy_by_length,
    pretrained_models,
    pretrained_results,
    run_scheme,
)
from ._results import DATA


def _run(job: tuple) -> dict:
    torch.set_num_threads(1)
    start = time.perf_counter()
    record = run_scheme(*job)
    accuracies = " ".join(
        f"{n}:{a:.3f}" for n, a in record["accuracy"].items()
    )
    print(
        f"{job[0]} seed {job[1]}: {time.perf_counter() - start:.0f} s wall, "
        f"{record.pop('cpu_seconds'):.0f} s CPU; final loss "
        f"{record['final_loss']:.3f}; accuracy {accuracies}",
        flush=True,
    )
    return record


def check() -> None:
    """Re-evaluate the shipped seed-0 models; print the largest gap to
    the shipped accuracies."""
    torch.set_num_threads(1)
    models, results = pretrained_models(), pretrained_results()
    for run in results["runs"]:
        if run["seed"] != SEEDS[0]:
            continue
        measured = accuracy_by_length(models[run["scheme"]])
        gap = max(abs(measured[n] - run["accuracy"][str(n)]) for n in LENGTHS)
        print(
            f"{run['scheme']:11} largest gap to the shipped accuracies: "
            f"{gap:.4f}"
        )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=DATA,
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="only re-evaluate the shipped seed-0 models",
    )
    args = parser.parse_args(argv)
    if args.check:
        check()
        return
    # the RoPE runs (training, then scalings and fine-tunes) take longest:
    # first, so that two processes finish together
    order = ("rope",) + tuple(s for s in SCHEMES if s != "rope")
    jobs = [(scheme, seed) for scheme in order for seed in SEEDS]
    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        records = pool.map(_run, jobs, chunksize=1)
    print(f"all runs: {time.perf_counter() - start:.0f} s wall")
    records.sort(key=lambda r: (SCHEMES.index(r["scheme"]), r["seed"]))
    states = {
        r["scheme"]: r.pop("state") for r in records if r["seed"] == SEEDS[0]
    }
    for record in records:
        record.pop("state", None)
    results = {
        "command": "python -m attnbook.train.long_context",
        "task": {**TASK, "period": list(TASK["period"])},
        "config": MODEL_CONFIG,
        "recipe": TRAINING_RECIPE,
        "finetune": FINETUNE_RECIPE,
        "seeds": list(SEEDS),
        "lengths": list(LENGTHS),
        "eval": {**EVAL_BATCHES, "seed": EVAL_SEED},
        "torch": str(torch.__version__),
        "runs": records,
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results, indent=1) + "\n"
    results_path = args.out_dir / RESULTS_FILE
    results_path.write_text(text)
    models_path = args.out_dir / MODELS_FILE
    torch.save({"config": MODEL_CONFIG, "models": states}, models_path)
    for path, constant in (
        (results_path, "LONG_CONTEXT_SHA256"),
        (models_path, "LONG_CONTEXT_MODELS_SHA256"),
    ):
        print(
            f"wrote {path}; SHA-256 (pin it as {constant} in "
            "attnbook/tasks/long_context.py): "
            f"{hashlib.sha256(path.read_bytes()).hexdigest()}"
        )


if __name__ == "__main__":
    main()
