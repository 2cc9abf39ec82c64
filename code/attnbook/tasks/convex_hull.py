"""Chapter 6's 2-D task from Vinyals et al. (2015): the convex hull of a set
of points, answered with pointers; the trained model ships as pinned weights
(``python -m attnbook.train.hull_pointer``)."""

import io

import torch

from .._checks import (
    is_finite_number,
    require_float,
    require_int,
    require_training,
)
from .._memory import require_matrix_fits
from .._random import (
    keep_global_rng,
    require_generator,
    seeded,
    seeded_generator,
)
from .._weights import load_pinned
from ..measure.threads import torch_threads
from ..nn.hull_pointer import PAD, HullPointerNetwork
from ._saved_models import check_saving, read_saved
from .sorting import teacher_forced_training

PRETRAINED_FILE = "hull_pointer.pt"
# SHA-256 of the shipped attnbook/data/hull_pointer.pt; pretrained_hull_pointer
# refuses any other bytes (python -m attnbook.train.hull_pointer prints it).
HULL_POINTER_SHA256 = (
    "a4a06025a37f919183a03865bd7199be8a5e33db2eabc469cd946d37f5681b5c"
)

TRAINING_RECIPE = {
    "hidden_dim": 64,
    "steps": 6_000,
    "batch_size": 64,
    "min_len": 5,
    "max_len": 10,
    "lr": 1e-2,
    "final_lr": 1e-5,
    "seed": 0,
}


def _cross(o, a, b) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def hull_order(points: list) -> list:
    """The convex hull of 2-D points (a list of (x, y)): the positions of its
    vertices counter-clockwise, starting from the lowest position (Andrew's
    monotone chain)."""
    _check_point_list(points)
    order = sorted(range(len(points)), key=lambda i: points[i])
    lower, upper = [], []
    for chain, indices in ((lower, order), (upper, order[::-1])):
        for i in indices:
            while (
                len(chain) >= 2
                and _cross(points[chain[-2]], points[chain[-1]], points[i])
                <= 0
            ):
                chain.pop()
            chain.append(i)
    ring = lower[:-1] + upper[:-1]  # counter-clockwise
    start = ring.index(min(ring))
    return ring[start:] + ring[:start]


def hull_batch(batch_size: int, n: int, generator: torch.Generator):
    """A batch of the convex hull task.

    Returns points: (batch_size, n, 2) uniform in the unit square, and
    target: (batch_size, n + 1) int64, each row the hull's vertices
    counter-clockwise from the lowest position, that position again (the
    polygon closed), then ``PAD`` (-1).
    """
    require_int("batch_size", batch_size)
    require_int("n", n, minimum=3)
    require_generator("generator", generator)
    require_matrix_fits(
        "the batch", (batch_size, n, 2), torch.float32, "use a smaller one, or"
    )
    points = torch.rand(batch_size, n, 2, generator=generator)
    target = torch.full((batch_size, n + 1), PAD)
    for row, cloud in enumerate(points.tolist()):
        ring = hull_order(cloud)
        closed = ring + ring[:1]
        target[row, : len(closed)] = torch.tensor(closed)
    return points, target


@torch.no_grad()
def _check_point_list(points) -> None:
    """points: a list of at least one (x, y) pair of finite numbers."""
    if (
        not isinstance(points, (list, tuple))
        or not points
        or not all(
            isinstance(p, (list, tuple))
            and len(p) == 2
            and all(is_finite_number(c) for c in p)
            for p in points
        )
    ):
        raise ValueError(
            "points must be a non-empty list of (x, y) pairs of finite "
            f"numbers, got {points!r:.40}"
        )


def hull_accuracy(
    model: HullPointerNetwork, n: int, num_sets: int = 1000, seed: int = 1234
) -> float:
    """Share of fresh sets of n points (drawn with ``seed``) whose whole
    greedy output, closing vertex included, is the true hull."""
    if not isinstance(model, HullPointerNetwork):
        raise TypeError(
            f"model must be a HullPointerNetwork, got {type(model).__name__}"
        )
    points, target = hull_batch(num_sets, n, seeded_generator(seed))
    return (model.decode(points) == target).all(dim=1).float().mean().item()


def train_hull_pointer(
    hidden_dim: int = 64,
    steps: int = 12_000,
    batch_size: int = 64,
    min_len: int = 5,
    max_len: int = 10,
    lr: float = 1e-2,
    final_lr: float = 1e-5,
    seed: int = 0,
    progress: bool = False,
    threads: int | None = 1,
):
    """Train a ``HullPointerNetwork`` with teacher forcing, as
    ``train_sorter`` trains the sorter: every step one n uniform in
    [min_len, max_len], Adam with the learning rate decaying exponentially
    from ``lr`` to ``final_lr``, gradients clipped at norm 1, seeded.
    Returns (model in eval mode, list of the training losses)."""
    require_training(steps=steps, batch_size=batch_size, lr=lr, seed=seed)
    require_int("min_len", min_len, minimum=3)
    require_int("max_len", max_len, minimum=min_len)
    with torch_threads(threads), seeded(seed):
        model = HullPointerNetwork(hidden_dim)
        generator = seeded_generator(seed)
        losses = teacher_forced_training(
            model, hull_batch, generator, steps=steps, batch_size=batch_size,
            lengths=(min_len, max_len), lr=lr, final_lr=final_lr,
            progress=progress,
        )  # fmt: skip
    return model.eval(), losses


def save_hull_pointer(model, path, info: dict | None = None) -> None:
    """Save the weights, the size and ``info`` to ``path`` (the same bytes on
    every run)."""
    check_saving(model, path, info, HullPointerNetwork)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    buffer = io.BytesIO()
    torch.save(
        {
            "hidden_dim": model.hidden_dim,
            "state_dict": state,
            "info": dict(info or {}),
        },
        buffer,
    )
    with open(path, "wb") as file:
        file.write(buffer.getvalue())


def _model_from(saved: dict):
    if (
        not isinstance(saved, dict)
        or not {
            "hidden_dim",
            "state_dict",
            "info",
        }
        <= saved.keys()
    ):
        raise ValueError(
            "the file does not hold a saved HullPointerNetwork (hidden_dim, "
            "state_dict, info)"
        )
    hidden_dim = require_int("the saved hidden_dim", saved["hidden_dim"])
    with keep_global_rng():
        model = HullPointerNetwork(hidden_dim)
    model.load_state_dict(saved["state_dict"])
    return model.eval(), saved["info"]


def load_hull_pointer(path):
    """Load a model saved by ``save_hull_pointer``: (model, info)."""
    return _model_from(read_saved(path, "hull pointer", "save_hull_pointer"))


def pretrained_hull_pointer(return_info: bool = False):
    """The book's trained convex hull pointer network (hidden size 64,
    trained on 5 to 10 points), in eval mode; the file is checked against
    ``HULL_POINTER_SHA256``."""
    model, info = _model_from(
        load_pinned(PRETRAINED_FILE, HULL_POINTER_SHA256)
    )
    return (model, info) if return_info else model


def _check_corners(corners) -> None:
    """corners: a float tensor (k, 2) with data (``TypeError`` or
    ``ValueError`` naming it otherwise)."""
    require_float("corners", corners)
    if corners.dim() != 2 or corners.shape[-1] != 2:
        raise ValueError(
            f"corners must be (k, 2), got shape {tuple(corners.shape)}"
        )


def polygon_area(corners: torch.Tensor) -> float:
    """The area enclosed by the polygon through ``corners`` (k, 2) in order,
    closed back to the first: |shoelace sum| / 2. For a polygon that crosses
    itself this counts the loops with their signs, so it is not the area
    covered."""
    _check_corners(corners)
    x, y = corners.double().unbind(-1)
    x_next, y_next = x.roll(-1), y.roll(-1)
    return (x * y_next - x_next * y).sum().abs().item() / 2


def is_simple_polygon(corners: torch.Tensor) -> bool:
    """Whether the closed polygon through ``corners`` (k, 2) is simple: at
    least three corners, and no two edges that do not share a corner cross.
    (Touching without crossing has probability 0 for random points and
    counts as simple.)"""
    _check_corners(corners)
    k = corners.shape[0]
    if k < 3:
        return False
    pairs = (k, k, 2)
    require_matrix_fits("the edge pairs of corners", pairs, torch.float64)
    start = corners.double()
    end = start.roll(-1, dims=0)  # edge i runs from corner i to corner i + 1

    def side(a, b, c):  # sign of the turn a -> b -> c, for all pairs
        return torch.sign(
            (b[..., 0] - a[..., 0]) * (c[..., 1] - a[..., 1])
            - (b[..., 1] - a[..., 1]) * (c[..., 0] - a[..., 0])
        )

    p, q = start[:, None], end[:, None]  # edge i, (k, 1, 2)
    r, s = start[None], end[None]  # edge j, (1, k, 2)
    crossing = (side(p, q, r) * side(p, q, s) < 0) & (
        side(r, s, p) * side(r, s, q) < 0
    )
    index = torch.arange(k, device=corners.device)
    i, j = torch.meshgrid(index, index, indexing="ij")
    apart = ((i - j) % k > 1) & ((j - i) % k > 1)  # share no corner
    return not bool((crossing & apart).any())


@torch.no_grad()
def hull_errors(
    model: HullPointerNetwork, n: int, num_sets: int = 1000, seed: int = 1234
) -> dict:
    """How wrong the greedy hulls are, on fresh sets of n points (drawn with
    ``seed``, as ``hull_accuracy``). Returns tensors of shape (num_sets,):
    "exact" (bool, the whole output right), "closed" (bool, the output ends
    by pointing back at its first vertex), "simple" (bool, the output's
    polygon does not cross itself) and "area_ratio" (float64, the area of
    the output's polygon over the true hull's; at most 1 for a simple
    polygon on the points, and it can exceed 1 only for one that crosses
    itself); and the sets themselves: "points" (num_sets, n, 2), "target"
    and "output" (num_sets, n + 1), the true and the greedy hulls as
    ``hull_batch`` writes them."""
    if not isinstance(model, HullPointerNetwork):
        raise TypeError(
            f"model must be a HullPointerNetwork, got {type(model).__name__}"
        )
    require_int("n", n, minimum=3)
    require_int("num_sets", num_sets)
    require_matrix_fits(
        "the points (num_sets, n, 2)", (num_sets, n, 2), torch.float32
    )
    points, target = hull_batch(num_sets, n, seeded_generator(seed))
    output = model.decode(points)
    exact = (output == target).all(dim=1)
    closed, simple, ratio = [], [], []
    for cloud, truth, guess in zip(points, target, output):
        ring = guess[guess != PAD]
        shut = len(ring) >= 4 and bool(ring[-1] == ring[0])
        corners = cloud[ring[:-1] if shut else ring]
        closed.append(shut)
        simple.append(is_simple_polygon(corners))
        true_area = polygon_area(cloud[truth[truth != PAD][:-1]])
        ratio.append(polygon_area(corners) / true_area)
    return {
        "exact": exact,
        "closed": torch.tensor(closed),
        "simple": torch.tensor(simple),
        "area_ratio": torch.tensor(ratio, dtype=torch.float64),
        "points": points,
        "target": target,
        "output": output,
    }
