"""Chapter 15's scaling curves: accuracy of a RoPE model at n = 512 against
the fine-tuning steps, for every RoPE scaling and the plain-RoPE control.

    # writes attnbook/data/rope_scaling_curve.json (about 25 min CPU)
    python -m attnbook.train.rope_scaling_curve
    python -m attnbook.train.rope_scaling_curve --out /tmp/curve.json

The RoPE models of ``CURVE_SEEDS``: seed 0 is the shipped model of
``python -m attnbook.train.long_context``, the others are trained here with
the same ``TRAINING_RECIPE``. Each is scaled by factor 8 with every entry
of ``CURVE_SCALINGS`` and fine-tuned at 512 positions (``FINETUNE_RECIPE``'s
batch size and learning rate) for ``CURVE_CHECKPOINTS[-1]`` steps, with its
accuracy at 64 and 512 and its layer-0 previous-token scores read at every
checkpoint (``finetune_curve``). Float32 on one thread; the file stores no
timing.
"""

import json
import time

import torch

from ..tasks.long_context import (
    CURVE_CHECKPOINTS,
    CURVE_FILE,
    CURVE_SCALINGS,
    CURVE_SEEDS,
    EVAL_BATCHES,
    EVAL_SEED,
    FINETUNE_RECIPE,
    TRAINING_RECIPE,
    accuracy,
    finetune_curve,
    pretrained_models,
    train_scheme,
)
from ._results import results_parser, write_pinned


def rope_model(seed: int):
    """The trained "rope" model of ``seed`` (seed 0: the shipped one)."""
    if seed == 0:
        return pretrained_models()["rope"]
    model, _ = train_scheme("rope", seed, **TRAINING_RECIPE)
    return model


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], CURVE_FILE)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    recipe = {k: FINETUNE_RECIPE[k] for k in ("batch_size", "lr", "length")}
    start = time.process_time()
    runs = []
    for seed in CURVE_SEEDS:
        model = rope_model(seed)
        trained = {n: accuracy(model, n, **EVAL_BATCHES) for n in (64, 512)}
        print(f"seed {seed}: trained, accuracy {trained}", flush=True)
        for name, (scaling, ramp) in CURVE_SCALINGS.items():
            curve = finetune_curve(
                model, scaling, CURVE_CHECKPOINTS, seed, ramp, **recipe
            )
            runs.append({"seed": seed, "scaling": name, "curve": curve})
            at_512 = " ".join(f"{c['512']:.2f}" for c in curve)
            print(
                f"  {name:15} accuracy at 512: {at_512} "
                f"({time.process_time() - start:.0f} s CPU)",
                flush=True,
            )
    results = {
        "command": "python -m attnbook.train.rope_scaling_curve",
        "pretraining": TRAINING_RECIPE,
        "finetune": recipe,
        "factor": 8,
        "checkpoints": list(CURVE_CHECKPOINTS),
        "seeds": list(CURVE_SEEDS),
        "scalings": {
            name: {"scaling": scaling, **ramp}
            for name, (scaling, ramp) in CURVE_SCALINGS.items()
        },
        "eval": {**EVAL_BATCHES, "seed": EVAL_SEED},
        "torch": str(torch.__version__),
        "runs": runs,
    }
    write_pinned(
        args.out,
        json.dumps(results, indent=1) + "\n",
        "ROPE_SCALING_CURVE_SHA256",
        "attnbook/tasks/long_context.py",
    )


if __name__ == "__main__":
    main()
