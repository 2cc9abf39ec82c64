"""Chapter 10's comparison of the recurrent date translator (chapter 5) with
the date Transformer, over training seeds and held-out draws.

``python -m attnbook.train.date_comparison`` trains two more seeds of each
model with exactly its shipped recipe (only the seed differs; the shipped
weights are the first seed) and scores every model on ``DRAW_SEEDS`` draws of
``DRAW_SIZE`` held-out dates. Training seeds are paired (``SEED_PAIRS``): the
dates of a draw for pair ``(t, r)`` are on days that occur in no training
batch of Transformer seed ``t`` or recurrent seed ``r``, so both models of a
pair are scored on the same dates. This module holds the design, the loader
of the shipped results (checked against ``DATE_COMPARISON_SHA256``) and the
pooled table.
"""

import json

from .._checks import require_saved
from .._weights import read_pinned
from ..measure.binomial import clopper_pearson

DATE_COMPARISON_FILE = "date_comparison.json"
DATE_COMPARISON_SHA256 = (
    "f6828b6879b375eef457dc21bea35ea90c82a22ed94cb4acf24ad4b98d3a5249"
)
MODELS = ("rnn", "transformer")
MODEL_NAMES = {
    "rnn": "RNN + attention (ch. 5)",
    "transformer": "Transformer (ch. 10)",
}
# (Transformer seed, RNN seed); the first pair is the shipped models
SEED_PAIRS = ((11, 0), (12, 1), (13, 2))
# the chapter's draw first; draw seeds differ from every training seed
DRAW_SEEDS = (31337, 31338, 31339)
DRAW_SIZE = 2000


def load_date_comparison() -> dict:
    """The shipped ``data/date_comparison.json`` of ``python -m
    attnbook.train.date_comparison`` (checked against its pinned SHA-256):
    {"seed_pairs", "draw_seeds", "draw_size", "recipes", "runs": [{"model",
    "seed", "shipped", "draw", "dates", "exact", "misses": [[index, source,
    output, target], ...]}, ...], ...}, one run per model, seed and draw."""
    return json.loads(
        read_pinned(DATE_COMPARISON_FILE, DATE_COMPARISON_SHA256)
    )


def pooled_misses(results: dict) -> dict:
    """{model: (misses, dates)} summed over every seed and draw of
    ``results`` (``load_date_comparison()``)."""
    require_saved("results", results, "runs")
    pooled = {}
    for run in results["runs"]:
        require_saved("a run", run, "model", "dates", "exact")
        misses, dates = pooled.get(run["model"], (0, 0))
        pooled[run["model"]] = (
            misses + run["dates"] - run["exact"],
            dates + run["dates"],
        )
    return pooled


def format_comparison(results: dict) -> str:
    """``load_date_comparison()`` as text: per model and training seed, the
    exact matches on each draw; then per model the pooled misses and the
    exact 95 % (Clopper-Pearson) interval of the miss rate."""
    require_saved("results", results, "runs", "draw_seeds", "draw_size")
    draws = results["draw_seeds"]
    exact = {}
    for run in results["runs"]:
        require_saved("a run", run, "model", "seed", "draw", "exact")
        if run["model"] not in MODELS:
            raise ValueError(
                f"a run's model must be one of {MODELS}, got {run['model']!r}"
            )
        exact[run["model"], run["seed"], run["draw"]] = run["exact"]
    header = f"{'model':24} {'seed':>4} " + " ".join(
        f"{'draw ' + str(d):>11}" for d in draws
    )
    lines = [f"exact matches of {results['draw_size']:,} held-out dates"]
    lines.append(header)
    for model in MODELS:
        seeds = sorted({s for m, s, _ in exact if m == model})
        for seed in seeds:
            counts = " ".join(
                f"{exact[model, seed, d]:>11,}"
                if (model, seed, d) in exact
                else f"{'-':>11}"
                for d in draws
            )
            lines.append(f"{MODEL_NAMES[model]:24} {seed:>4} {counts}")
    lines.append(
        "pooled over seeds and draws: misses, exact 95 % interval of the rate"
    )
    pooled = pooled_misses(results)
    for model in sorted(pooled, key=MODELS.index):
        misses, dates = pooled[model]
        low, high = clopper_pearson(misses, dates)
        lines.append(
            f"{MODEL_NAMES[model]:24} {misses:>3} of {dates:,}: "
            f"{100 * low:.4f} % to {100 * high:.4f} %"
        )
    return "\n".join(lines)
