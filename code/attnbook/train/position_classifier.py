"""Train chapter 6's fixed-vocabulary baseline and ship it with the package.

    # train, evaluate, write attnbook/data/position_classifier.pt
    python -m attnbook.train.position_classifier
    python -m attnbook.train.position_classifier --check

A ``PositionClassifier`` (chapter 5's attention decoder with a softmax over
10 position classes, and the sorter's mask) trained with exactly the sorter's
recipe (``attnbook.tasks.sorting.BASELINE_RECIPE``: same steps, batches,
lengths 5 to 10, learning rates and seed, one thread). It is evaluated at
n = 5 and 10 only: it has no class for a position beyond 10.
"""

from ..tasks.sorting import BASELINE_FILE, BASELINE_RECIPE
from ._results import DATA
from .sorter import train_and_save


def main(argv=None) -> None:
    out = DATA / BASELINE_FILE
    train_and_save(
        argv,
        __doc__,
        BASELINE_RECIPE,
        "train.position_classifier",
        out,
        lengths=(5, 10),
    )


if __name__ == "__main__":
    main()
