"""Measure what each head of chapter 12's language model is worth under
four replacements of its attention weights, and ship the result.

    # 32 held-out windows, write attnbook/data/head_interventions.json
    python -m attnbook.train.head_interventions
    python -m attnbook.train.head_interventions --out /tmp/x.json

No training: the shipped language model, run in float64 on one thread on
the windows of ``held_out_windows`` (``WINDOWS``), 4 x 16 edited forward
passes (about a minute on one core). Prints the mean cost per head.
"""

from ..experiments.head_interventions import (
    HEAD_INTERVENTIONS_FILE,
    REPLACEMENTS,
    WINDOWS,
    held_out_windows,
    intervention_costs,
    results_json,
)
from ..measure.threads import single_thread
from ..tasks.language_model import pretrained_language_model
from ..tasks.text import corpus_split, encode
from ._results import results_parser, write_pinned


def main(argv=None) -> None:
    parser = results_parser(__doc__, HEAD_INTERVENTIONS_FILE)
    args = parser.parse_args(argv)
    model = pretrained_language_model().model.double().eval()
    _, held_out_text = corpus_split()
    windows, reference = held_out_windows(
        encode(held_out_text), WINDOWS["count"], WINDOWS["length"]
    )
    with single_thread():
        costs = intervention_costs(model, windows, reference)
    print(f"as trained: {costs['base'].mean():.4f} bits/char")
    for how in REPLACEMENTS:
        mean = costs[how].mean(dim=-1)
        print(how, " ".join(f"{x:.3f}" for x in mean.flatten()))
    text = results_json(costs, {**WINDOWS, "dtype": "float64", "seed": 0})
    write_pinned(
        args.out,
        text,
        "HEAD_INTERVENTIONS_SHA256",
        "attnbook/experiments/head_interventions.py",
    )


if __name__ == "__main__":
    main()
