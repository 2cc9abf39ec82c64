"""Chapter 9's two probes of post-LN and pre-LN, computed once: the gradient
norm of every block's W_2 at initialisation (4 depths, 3 seeds) and what the
first 20 Adam steps without warm-up do to each block.

    # writes attnbook/data/norm_placement_probes.json (about 10 s CPU)
    python -m attnbook.train.norm_placement_probes
    python -m attnbook.train.norm_placement_probes --out /tmp/probes.json

Every number is ``norm_placement.gradient_norms_at_init`` or
``norm_placement.early_steps`` with the chapter's arguments, in float64 on
one thread; the chapter recomputes one case of each and compares. The file
stores no timing.
"""

import json

import torch

from ..experiments.norm_placement import (
    PLACEMENTS,
    PROBE_CHECKPOINTS,
    PROBE_DEPTHS,
    PROBE_SEEDS,
    PROBE_SIZE,
    PROBES_FILE,
    early_steps,
    gradient_norms_at_init,
)
from ._results import results_parser, write_pinned


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], PROBES_FILE)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    norms = {
        placement: {
            str(depth): [
                gradient_norms_at_init(placement, depth, seed)
                for seed in PROBE_SEEDS
            ]
            for depth in PROBE_DEPTHS
        }
        for placement in PLACEMENTS
    }
    steps = {
        placement: early_steps(
            placement, checkpoints=PROBE_CHECKPOINTS, probe_size=PROBE_SIZE
        )
        for placement in PLACEMENTS
    }
    results = {
        "command": "python -m attnbook.train.norm_placement_probes",
        "depths": list(PROBE_DEPTHS),
        "seeds": list(PROBE_SEEDS),
        "checkpoints": list(PROBE_CHECKPOINTS),
        "probe_size": PROBE_SIZE,
        "torch": str(torch.__version__),
        "gradient_norms": norms,
        "early_steps": steps,
    }
    write_pinned(
        args.out,
        json.dumps(results, indent=1) + "\n",
        "NORM_PLACEMENT_PROBES_SHA256",
        "attnbook/experiments/norm_placement.py",
    )


if __name__ == "__main__":
    main()
