"""Chapter 6's additions: the fixed-vocabulary baseline
(``PositionClassifier``) and the convex hull pointer network."""

from pathlib import Path

import pytest
import torch

import attnbook
from attnbook import _weights
from attnbook.nn.hull_pointer import PAD, HullPointerNetwork, closing_keep_mask
from attnbook.nn.pointer import PositionClassifier
from attnbook.tasks import convex_hull, sorting


def _cross(o, a, b):
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def test_position_classifier_scores_only_its_classes():
    torch.manual_seed(0)
    model = PositionClassifier(hidden_dim=8, max_positions=6).eval()
    x, target = sorting.sorting_batch(3, 6, torch.Generator().manual_seed(1))
    scores = model.teacher_forced_scores(x, target)
    assert scores.shape == (3, 6, 6)
    x4, target4 = sorting.sorting_batch(3, 4, torch.Generator().manual_seed(2))
    assert model.teacher_forced_scores(x4, target4).shape == (3, 4, 4)
    order = model.decode(x)
    assert torch.equal(order.sort(1).values, torch.arange(6).expand(3, 6))
    with pytest.raises(ValueError, match="6 output classes"):
        model.decode(torch.rand(2, 7))


def test_position_classifier_scores_ignore_the_content_of_positions():
    """Class j's score comes from [s_t; c_t], not from e_j alone: permuting
    the keys leaves the context (an average) and hence the scores
    unchanged, unlike the pointer's."""
    torch.manual_seed(0)
    model = PositionClassifier(hidden_dim=8, max_positions=5)
    queries, keys = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    permuted = keys[:, [4, 0, 3, 1, 2]]
    with torch.no_grad():
        same = model.pointer_scores(queries, keys)
        moved = model.pointer_scores(queries, permuted)
    assert torch.allclose(same, moved, atol=1e-6)


def test_train_sorter_trains_the_baseline_on_request():
    model, losses = sorting.train_sorter(
        hidden_dim=8, steps=3, batch_size=4, max_positions=10
    )
    assert isinstance(model, PositionClassifier) and len(losses) == 3
    with pytest.raises(ValueError, match="max_positions"):
        sorting.train_sorter(steps=1, max_len=10, max_positions=9)


def test_saved_baseline_round_trips(tmp_path):
    torch.manual_seed(0)
    model = PositionClassifier(hidden_dim=8, max_positions=7)
    sorting.save_sorter(model, tmp_path / "b.pt", {"a": 1})
    loaded, info = sorting.load_sorter(tmp_path / "b.pt")
    assert isinstance(loaded, PositionClassifier)
    assert loaded.max_positions == 7 and info == {"a": 1}
    x = torch.rand(2, 7, generator=torch.Generator().manual_seed(0))
    assert torch.equal(loaded.decode(x), model.eval().decode(x))


@pytest.mark.parametrize(
    "name, digest",
    [
        (sorting.BASELINE_FILE, sorting.POSITION_CLASSIFIER_SHA256),
        (convex_hull.PRETRAINED_FILE, convex_hull.HULL_POINTER_SHA256),
    ],
)
def test_shipped_files_match_their_pins(name, digest):
    data = (Path(attnbook.__file__).parent / "data" / name).read_bytes()
    assert _weights.sha256_of(data) == digest


def test_pretrained_models_load():
    baseline = attnbook.tasks.sorting.pretrained_position_classifier()
    assert baseline.max_positions == 10
    hull = convex_hull.pretrained_hull_pointer()
    assert isinstance(hull, HullPointerNetwork)


@pytest.mark.parametrize("seed", range(5))
def test_hull_order_is_the_convex_hull(seed):
    g = torch.Generator().manual_seed(seed)
    points = torch.rand(12, 2, generator=g).tolist()
    ring = convex_hull.hull_order(points)
    assert ring[0] == min(ring) and len(set(ring)) == len(ring) >= 3
    for a, b in zip(ring, ring[1:] + ring[:1]):  # every point left of edge
        for p in points:
            assert _cross(points[a], points[b], p) >= -1e-12
    # a point not in the ring lies strictly inside
    for i in set(range(12)) - set(ring):
        assert all(
            _cross(points[a], points[b], points[i]) > 0
            for a, b in zip(ring, ring[1:] + ring[:1])
        )


def test_hull_order_of_a_square_with_a_centre():
    points = [(0.5, 0.5), (1, 1), (0, 0), (1, 0), (0, 1)]
    assert convex_hull.hull_order(points) == [1, 4, 2, 3]


def test_hull_batch_closes_and_pads():
    points, target = convex_hull.hull_batch(
        20, 8, torch.Generator().manual_seed(0)
    )
    assert points.shape == (20, 8, 2) and target.shape == (20, 9)
    for row in target.tolist():
        used = [j for j in row if j != PAD]
        assert used[0] == used[-1] and len(set(used)) == len(used) - 1
        assert row[len(used) :] == [PAD] * (9 - len(used))


def test_closing_keep_mask_by_hand():
    target = torch.tensor([[2, 0, 3, 1, 2, PAD]])
    keep = closing_keep_mask(target, 4)[0].int().tolist()
    assert keep == [
        [1, 1, 1, 1],
        [1, 1, 0, 1],
        [0, 1, 0, 1],
        [0, 1, 1, 0],  # the first vertex comes back at step 3
        [0, 0, 1, 0],
        [0, 0, 1, 0],
    ]


def test_hull_loss_is_cross_entropy_over_the_valid_steps():
    torch.manual_seed(0)
    model = HullPointerNetwork(hidden_dim=8)
    points, target = convex_hull.hull_batch(
        6, 7, torch.Generator().manual_seed(3)
    )
    scores = model.teacher_forced_scores(points, target)
    masked = scores.masked_fill(~closing_keep_mask(target, 7), -torch.inf)
    reference = torch.nn.functional.cross_entropy(
        masked.reshape(-1, 7), target.reshape(-1), ignore_index=PAD
    )
    loss = model.loss(points, target)
    assert torch.allclose(loss, reference, atol=1e-6)
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())


def test_hull_decode_outputs_closed_polygons():
    torch.manual_seed(0)
    model = HullPointerNetwork(hidden_dim=8).eval()
    points = torch.rand(10, 6, 2, generator=torch.Generator().manual_seed(1))
    out = model.decode(points)
    assert out.shape == (10, 7)
    for row in out.tolist():
        used = [j for j in row if j != PAD]
        assert row[: len(used)] == used  # PAD only at the end
        assert used[0] == used[-1] and len(used) >= 4
        assert len(set(used)) == len(used) - 1


def test_trained_hull_model_beats_chance():
    model = convex_hull.pretrained_hull_pointer()
    assert convex_hull.hull_accuracy(model, 6, 200, seed=5) > 0.5


@pytest.mark.parametrize("shape", [(2, 5), (2, 5, 3), (2, 2, 2)])
def test_hull_network_refuses_malformed_points(shape):
    model = HullPointerNetwork(hidden_dim=4)
    with pytest.raises(ValueError, match="points"):
        model.decode(torch.rand(*shape))


def _training_rows(recipe, lengths, batch):
    """Every list of the given lengths that the recipe's training stream
    draws (the same draws, in the same order, as the training loop)."""
    generator = torch.Generator().manual_seed(recipe["seed"])
    rows = set()
    for _ in range(recipe["steps"]):
        n = int(
            torch.randint(
                recipe["min_len"],
                recipe["max_len"] + 1,
                (1,),
                generator=generator,
            )
        )
        x, _ = batch(recipe["batch_size"], n, generator)
        if n in lengths:
            rows.update(tuple(row) for row in x.flatten(1).tolist())
    return rows


def test_chapter_test_lists_are_disjoint_from_the_training_lists():
    """Chapter 6 tests the sorters on lists drawn with seed 500 + n (n = 5,
    10) and the hull network on sets drawn with seed 700 + n: none of them
    occurs in the training streams of the shipped models."""
    seen = _training_rows(
        sorting.TRAINING_RECIPE, {5, 10}, sorting.sorting_batch
    )
    assert len(seen) > 100_000
    for n in (5, 10):
        x, _ = sorting.sorting_batch(
            1000, n, torch.Generator().manual_seed(500 + n)
        )
        assert not seen & {tuple(row) for row in x.tolist()}
    seen = _training_rows(
        convex_hull.TRAINING_RECIPE, {5, 10}, convex_hull.hull_batch
    )
    for n in (5, 10):
        points, _ = convex_hull.hull_batch(
            500, n, torch.Generator().manual_seed(700 + n)
        )
        assert not seen & {tuple(row) for row in points.flatten(1).tolist()}


def test_polygon_area_and_simplicity_by_hand():
    square = torch.tensor([[0.0, 0.0], [2.0, 0.0], [2.0, 1.0], [0.0, 1.0]])
    assert convex_hull.polygon_area(square) == 2.0
    assert convex_hull.polygon_area(square.flip(0)) == 2.0  # clockwise too
    assert convex_hull.is_simple_polygon(square)
    # the same corners visited as a bow tie: two triangles of opposite
    # orientation, whose signed areas cancel; its edges 0 and 2 cross
    bow_tie = square[[0, 2, 1, 3]]
    assert convex_hull.polygon_area(bow_tie) == 0.0
    assert not convex_hull.is_simple_polygon(bow_tie)
    assert not convex_hull.is_simple_polygon(square[:2])  # a segment
    with pytest.raises(ValueError, match="corners must be"):
        convex_hull.polygon_area(torch.zeros(4, 3))


def test_hull_errors_agree_with_exact_match_and_with_a_true_hull():
    model = convex_hull.pretrained_hull_pointer()
    result = convex_hull.hull_errors(model, 8, num_sets=60, seed=3)
    accuracy = convex_hull.hull_accuracy(model, 8, num_sets=60, seed=3)
    assert result["exact"].float().mean().item() == accuracy
    assert 0 < accuracy < 1  # some right, some wrong: both kinds checked
    right = result["area_ratio"][result["exact"]]
    assert torch.allclose(right, torch.ones_like(right), atol=1e-12)
    assert result["simple"][result["exact"]].all()
    # a simple polygon on the points lies inside their hull
    simple = result["area_ratio"][result["simple"]]
    assert (simple <= 1 + 1e-12).all()


def test_the_hull_pointer_files_are_checked_as_the_sorter_files(tmp_path):
    from attnbook.nn.hull_pointer import HullPointerNetwork
    from attnbook.tasks.convex_hull import load_hull_pointer, save_hull_pointer

    torch.manual_seed(0)
    model = HullPointerNetwork(8)
    with pytest.raises(TypeError, match="model must be a HullPointerNetwork"):
        save_hull_pointer(torch.nn.Linear(2, 2), tmp_path / "a.pt")
    with pytest.raises(TypeError, match="path must be a file path"):
        save_hull_pointer(model, "")
    with pytest.raises(TypeError, match="info must be a dict"):
        save_hull_pointer(model, tmp_path / "a.pt", info="x")
    with pytest.raises(TypeError, match="path must be a file path"):
        load_hull_pointer(None)
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="could not be read as a saved hull"):
        load_hull_pointer(junk)
    torch.save({"weights": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="does not hold a saved HullPointer"):
        load_hull_pointer(tmp_path / "other.pt")
    save_hull_pointer(model, tmp_path / "ok.pt", info={"n": 1})
    loaded, info = load_hull_pointer(tmp_path / "ok.pt")
    assert info == {"n": 1}
    for a, b in zip(model.parameters(), loaded.parameters()):
        assert torch.equal(a, b)


@pytest.mark.parametrize(
    "target, error, match",
    [
        (torch.zeros(2, 0, dtype=torch.long), ValueError, "L >= 1"),
        (
            torch.ones(2, 7, dtype=torch.bool),
            TypeError,
            "target must be int64",
        ),
        (torch.full((2, 7), -1), ValueError, "a vertex first"),
        (torch.full((2, 7), 6), ValueError, r"positions in \[0, 6\)"),
        (torch.zeros(3, 7, dtype=torch.long), ValueError, "target has 3 rows"),
    ],
)
def test_the_hull_loss_refuses_a_target_it_cannot_score(target, error, match):
    from attnbook.nn.hull_pointer import HullPointerNetwork

    torch.manual_seed(0)
    model = HullPointerNetwork(8)
    with pytest.raises(error, match=match):
        model.loss(torch.rand(2, 6, 2), target)


def test_the_hull_loss_is_finite_on_a_true_hull():
    from attnbook.nn.hull_pointer import HullPointerNetwork
    from attnbook.tasks.convex_hull import hull_batch

    torch.manual_seed(0)
    points, target = hull_batch(4, 6, torch.Generator().manual_seed(0))
    assert torch.isfinite(HullPointerNetwork(8).loss(points, target))


def test_hull_helpers_refuse_bad_input_by_name():
    """Probe findings: points of another dtype reached an LSTM's dtype
    error, a point list of None or text and a model that is none reached
    Python's errors, n = 10**12 reached the allocator."""
    model = HullPointerNetwork(8)
    points = torch.rand(2, 6, 2)
    for method in (model.decode, lambda p: model.loss(p, None)):
        with pytest.raises(TypeError, match="points"):
            method(points.double())
    for bad in (None, [], "abc", [None], [(0.0, float("nan"))]):
        with pytest.raises(ValueError, match="points"):
            convex_hull.hull_order(bad)
    with pytest.raises(TypeError, match="HullPointerNetwork"):
        convex_hull.hull_accuracy(None, 5, 4)
    target = torch.zeros(2, 7, dtype=torch.int64)
    with pytest.raises(ValueError, match="keep mask"):
        closing_keep_mask(target, 10**12)
