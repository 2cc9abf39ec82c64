"""attnbook.tasks.sorting: the sorting task's batches, training and accuracy,
and the shipped sorter's weight file (pinned, checked when loaded)."""

import shutil
from pathlib import Path

import pytest
import torch

import attnbook
from attnbook import PointerNetwork, _weights
from attnbook.tasks import sorting as pointer


@pytest.fixture
def shipped_copy(tmp_path, monkeypatch):
    """A copy of attnbook/data that the loader reads instead of the installed one."""
    data = tmp_path / "data"
    shutil.copytree(Path(attnbook.__file__).parent / "data", data)

    class Files:
        @staticmethod
        def files(_package):
            return tmp_path

    monkeypatch.setattr(_weights, "resources", Files)
    return data / pointer.PRETRAINED_FILE


def test_pinned_sorter_loads(shipped_copy):
    model = attnbook.pretrained_sorter()
    assert model.decode(torch.tensor([[0.2, 0.9, 0.5]])).tolist() == [
        [1, 2, 0]
    ]


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "append"])
def test_damaged_weights_are_refused(shipped_copy, damage):
    data = bytearray(shipped_copy.read_bytes())
    if damage == "flip a byte":
        data[len(data) // 2] ^= 0x01
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data += b"\0"
    shipped_copy.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256.*pins"):
        attnbook.pretrained_sorter()


def test_missing_weights_are_named(shipped_copy):
    shipped_copy.unlink()
    with pytest.raises(
        FileNotFoundError, match="pointer_sorter.pt is missing"
    ):
        attnbook.pretrained_sorter()


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_load_sorter_names_an_unreadable_file(tmp_path, damage):
    path = tmp_path / "sorter.pt"
    shipped = (
        Path(attnbook.__file__).parent / "data" / pointer.PRETRAINED_FILE
    ).read_bytes()
    path.write_bytes(
        shipped[: len(shipped) // 3]
        if damage == "truncate"
        else b"not a weight file"
    )
    with pytest.raises(
        ValueError, match="could not be read as a saved sorter"
    ):
        pointer.load_sorter(path)
    with pytest.raises(FileNotFoundError):
        pointer.load_sorter(tmp_path / "missing.pt")


def test_the_pin_is_a_constant_of_the_code():
    assert len(pointer.POINTER_SORTER_SHA256) == 64
    assert pointer.POINTER_SORTER_SHA256 == _weights.sha256_of(
        (
            Path(attnbook.__file__).parent / "data" / pointer.PRETRAINED_FILE
        ).read_bytes()
    )


def test_sorting_batch_needs_a_generator():
    from attnbook.tasks.sorting import sorting_batch

    state = torch.get_rng_state()
    with pytest.raises(TypeError, match="generator"):
        sorting_batch(2, 4, None)
    with pytest.raises(ValueError, match="GiB"):
        sorting_batch(10**6, 10**6, torch.Generator())
    assert torch.equal(state, torch.get_rng_state())


def test_sorting_accuracy_refuses_a_tensor_count_and_leaves_it_alone():
    from attnbook.tasks.sorting import sorting_accuracy

    count = torch.tensor(20)
    with pytest.raises(ValueError, match="num_sequences"):
        sorting_accuracy(attnbook.pretrained_sorter(), 5, num_sequences=count)
    assert count.item() == 20
    with pytest.raises(ValueError, match="num_sequences"):
        sorting_accuracy(attnbook.pretrained_sorter(), 5, num_sequences=0)


def test_scale_to_unit_refuses_bounds_that_reverse_the_order():
    from attnbook.tasks.sorting import scale_to_unit

    x = torch.tensor([[3.0, 1.0, 2.0]])
    with pytest.raises(ValueError, match="high"):
        scale_to_unit(x, low=0.9, high=0.1)
    with pytest.raises(ValueError, match="low"):
        scale_to_unit(x, low=float("nan"))


def test_a_crafted_sorter_file_is_refused_before_it_allocates(tmp_path):
    from attnbook.tasks.sorting import load_sorter

    path = tmp_path / "crafted.pt"
    torch.save({"hidden_dim": 10**6, "state_dict": {}, "info": {}}, path)
    with pytest.raises(ValueError, match="GiB"):
        load_sorter(path)
    torch.save(
        {"hidden_dim": 8, "state_dict": {"x": torch.ones(1)}, "info": {}}, path
    )
    with pytest.raises(ValueError, match="save_sorter"):
        load_sorter(path)


def test_teacher_forced_training_needs_a_generator_and_leaves_the_rng():
    from attnbook.tasks.sorting import sorting_batch, teacher_forced_training

    torch.manual_seed(0)
    network = PointerNetwork(8)
    before = [p.detach().clone() for p in network.parameters()]
    state = torch.get_rng_state()
    with pytest.raises(TypeError, match="generator must be a torch.Gen"):
        teacher_forced_training(
            network, sorting_batch, None, steps=1, batch_size=2,
            lengths=(3, 4), lr=1e-3, final_lr=1e-4,
        )  # fmt: skip
    assert torch.equal(torch.get_rng_state(), state)
    for old, new in zip(before, network.parameters()):
        assert torch.equal(old, new)


@pytest.mark.parametrize(
    "change, error, match",
    [
        ({"steps": 10**12}, ValueError, "steps"),
        ({"final_lr": 0.0}, ValueError, "final_lr"),
        ({"model": torch.nn.Linear(2, 2)}, TypeError, "loss"),
        ({"draw_batch": None}, TypeError, "draw_batch"),
        ({"lengths": (3,)}, TypeError, "lengths"),
        ({"lengths": (4, 3)}, ValueError, "lengths"),
    ],
    ids=["steps", "final_lr", "model", "draw_batch", "pair", "order"],
)
def test_teacher_forced_training_refuses_before_training(change, error, match):
    # the probe's 10**12 steps trained until killed, changing the model
    from attnbook.tasks.sorting import sorting_batch, teacher_forced_training

    torch.manual_seed(0)
    network = PointerNetwork(8)
    before = [p.detach().clone() for p in network.parameters()]
    settings = dict(
        model=network, draw_batch=sorting_batch,
        generator=torch.Generator().manual_seed(0), steps=1, batch_size=2,
        lengths=(3, 4), lr=1e-3, final_lr=1e-4,
    )  # fmt: skip
    settings.update(change)
    model, draw, generator = (
        settings.pop(k) for k in ("model", "draw_batch", "generator")
    )
    with pytest.raises(error, match=match):
        teacher_forced_training(model, draw, generator, **settings)
    for old, new in zip(before, network.parameters()):
        assert torch.equal(old, new)
