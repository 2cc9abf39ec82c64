"""Chapter 10's model comparison over training seeds and held-out draws.

    # writes attnbook/data/date_comparison.json (about 8 minutes CPU)
    python -m attnbook.train.date_comparison
    python -m attnbook.train.date_comparison --out /tmp/comparison.json
    # first retrain the shipped seeds and check they give the shipped weights
    python -m attnbook.train.date_comparison --verify-shipped

For each pair of training seeds in
``attnbook.experiments.date_comparison.SEED_PAIRS`` the script takes the date
Transformer (``date_transformer.TRAINING_RECIPE``) and chapter 5's recurrent
translator (``date_translator.RECIPE``) trained with that seed and otherwise
exactly the shipped recipe: the first pair's are the shipped weights, loaded,
the others are trained here on one thread. Every model translates (greedily,
500 dates at a time, as the chapter does) the dates of each of ``DRAW_SEEDS``
drawn by ``held_out_date_pairs`` for its pair: on days that occur in no
training batch of either model of the pair. The file stores, per model, seed
and draw, the number of exact matches and every miss (its index in the draw,
source, output, target); it stores no timing (the script prints the training
times).
"""

import json
import time

import torch

from .._checks import require_int, require_translator
from ..experiments.date_comparison import (
    DATE_COMPARISON_FILE,
    DRAW_SEEDS,
    DRAW_SIZE,
    SEED_PAIRS,
)
from ..tasks.date_transformer import (
    DateTransformer,
    pretrained_date_transformer,
)
from ..tasks.date_translator import DateTranslator, pretrained_date_translator
from ._results import results_parser, write_pinned
from .date_transformer import (
    TRAINING_RECIPE,
    held_out_date_pairs,
    train_date_transformer,
    translations,
)
from .date_translator import RECIPE as RNN_RECIPE
from .date_translator import train_date_translator


def comparison_dates(draw: int, pair=SEED_PAIRS[0]):
    """(sources, targets): the ``DRAW_SIZE`` held-out dates of ``draw`` for
    the pair of training seeds ``pair`` = (Transformer seed, RNN seed):
    ``held_out_date_pairs`` with those seeds."""
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise TypeError(
            f"pair must be (Transformer seed, RNN seed), got {pair!r:.40}"
        )
    transformer_seed, rnn_seed = pair
    require_int("transformer seed", transformer_seed, minimum=0)
    require_int("RNN seed", rnn_seed, minimum=0)
    return held_out_date_pairs(
        DRAW_SIZE, draw, transformer_seed=transformer_seed, rnn_seed=rnn_seed
    )


def score(translator, dates) -> dict:
    """{"dates", "exact", "misses": [[index, source, output, target], ...]}
    of ``translator.translate`` (greedy) on ``dates`` = (sources, targets),
    500 inputs at a time."""
    require_translator(translator)
    if not isinstance(dates, (tuple, list)) or len(dates) != 2:
        raise TypeError(
            f"dates must be (sources, targets), got {str(dates):.40}"
        )
    sources, targets = dates
    if not (
        isinstance(sources, list)
        and isinstance(targets, list)
        and len(sources) == len(targets)
        and all(isinstance(t, str) for t in sources + targets)
    ):
        raise TypeError(
            "dates must be two lists of strings of one length (sources, "
            f"targets), got {str(dates):.40}"
        )
    outputs = translations(translator, sources)
    misses = [
        [i, s, o, t]
        for i, (s, o, t) in enumerate(zip(sources, outputs, targets))
        if o != t
    ]
    return {
        "dates": len(sources),
        "exact": len(sources) - len(misses),
        "misses": misses,
    }


def trained(model: str, seed: int):
    """The translator of ``model`` ("rnn" or "transformer") trained with
    ``seed`` and the shipped recipe; the shipped one for the shipped seed."""
    if model not in ("rnn", "transformer"):
        raise ValueError(f"model must be 'rnn' or 'transformer': {model!r}")
    require_int("seed", seed, minimum=0)
    if model == "transformer":
        if seed == TRAINING_RECIPE["seed"]:
            return pretrained_date_transformer()
        net, _ = train_date_transformer(**dict(TRAINING_RECIPE, seed=seed))
        return DateTransformer(net)
    if seed == RNN_RECIPE["seed"]:
        return pretrained_date_translator()
    return DateTranslator(train_date_translator(dict(RNN_RECIPE, seed=seed)))


def verify_shipped() -> dict:
    """Retrain both shipped seeds here and compare every weight with the
    shipped one; returns {model: True if all are equal}.

    Equal weights show that the extra seeds run the shipped recipe. On
    another CPU than the one that trained the shipped file the weights may
    differ by rounding alone (CONTRIBUTING.md: "On another CPU"), so a
    difference is printed, not raised."""
    found = {}
    for model, seed, shipped in (
        ("transformer", TRAINING_RECIPE["seed"], pretrained_date_transformer),
        ("rnn", RNN_RECIPE["seed"], pretrained_date_translator),
    ):
        start = time.process_time()
        if model == "transformer":
            net, _ = train_date_transformer(**TRAINING_RECIPE)
        else:
            net = train_date_translator(RNN_RECIPE)
        reference = shipped().model.state_dict()
        same = net.state_dict().keys() == reference.keys() and all(
            torch.equal(v, reference[k]) for k, v in net.state_dict().items()
        )
        print(
            f"{model} seed {seed} retrained in "
            f"{time.process_time() - start:.0f} s CPU: "
            f"{'bit-identical to' if same else 'DIFFERENT from'} the shipped "
            "weights",
            flush=True,
        )
        found[model] = same
    return found


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], DATE_COMPARISON_FILE)
    parser.add_argument(
        "--verify-shipped",
        action="store_true",
        help="first retrain the shipped seeds and compare with the shipped",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.verify_shipped:
        verify_shipped()
    runs = []
    for pair in SEED_PAIRS:
        draws = {draw: comparison_dates(draw, pair) for draw in DRAW_SEEDS}
        for model, seed in zip(("transformer", "rnn"), pair):
            wall, cpu = time.perf_counter(), time.process_time()
            translator = trained(model, seed)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(
                f"{model} seed {seed}: trained or loaded in {wall:.1f} s "
                f"wall, {cpu:.1f} s CPU",
                flush=True,
            )
            for draw, dates in draws.items():
                run = {
                    "model": model,
                    "seed": seed,
                    "shipped": pair == SEED_PAIRS[0],
                    "draw": draw,
                    **score(translator, dates),
                }
                print(
                    f"  draw {draw}: {run['exact']} of {run['dates']} exact; "
                    f"misses {run['misses']}",
                    flush=True,
                )
                runs.append(run)
    results = {
        "command": "python -m attnbook.train.date_comparison",
        "seed_pairs": [list(pair) for pair in SEED_PAIRS],
        "draw_seeds": list(DRAW_SEEDS),
        "draw_size": DRAW_SIZE,
        "recipes": {"transformer": TRAINING_RECIPE, "rnn": RNN_RECIPE},
        "torch": str(torch.__version__),
        "runs": runs,
    }
    write_pinned(
        args.out,
        json.dumps(results, indent=1) + "\n",
        "DATE_COMPARISON_SHA256",
        "attnbook/experiments/date_comparison.py",
    )


if __name__ == "__main__":
    main()
