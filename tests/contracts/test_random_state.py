"""The global random state: no library call moves it, a refused call
restores it, and seeded builds give the same model in any thread."""

import pytest
import torch

import attnbook
from attnbook.nn import seq2seq
from attnbook.nn.decoder import TransformerDecoderBlock
from attnbook.tasks import card_lookup as lookup
from attnbook.tasks import sorting as pointer

from _threads import same_weights_in_threads


def _rng_untouched(call):
    torch.manual_seed(12345)
    state = torch.random.get_rng_state()
    call()
    return torch.equal(state, torch.random.get_rng_state())


def test_library_calls_leave_the_global_rng_as_found():
    from attnbook.experiments.complexity import (
        comparison_layers,
        conv_layers_to_connect,
    )
    from attnbook.tasks.order_classifier import train_order_classifier
    from attnbook.widgets import multihead as multihead_widget
    from attnbook.widgets import self_attention as self_attention_widget

    self_attention_widget.toy_self_attention.cache_clear()
    calls = {
        "pretrained_sorter": attnbook.pretrained_sorter,
        "self_attention_view": self_attention_widget.self_attention_view,
        "multihead_view": multihead_widget.multihead_view,
        "train_sorter": lambda: pointer.train_sorter(
            hidden_dim=4, steps=2, batch_size=4
        ),
        "train_order_classifier": lambda: train_order_classifier(
            steps=2, batch_size=4, progress=False
        ),
        "comparison_layers": lambda: comparison_layers(4),
        "conv_layers_to_connect": lambda: conv_layers_to_connect(3),
    }
    moved = [name for name, call in calls.items() if not _rng_untouched(call)]
    assert moved == []


def test_seeded_training_still_gives_the_same_model():
    a, _ = pointer.train_sorter(hidden_dim=4, steps=3, batch_size=4)
    torch.manual_seed(999)  # whatever the reader's stream holds
    b, _ = pointer.train_sorter(hidden_dim=4, steps=3, batch_size=4)
    assert all(
        torch.equal(p, q)
        for p, q in zip(a.state_dict().values(), b.state_dict().values())
    )


def test_refused_constructors_do_not_move_the_global_rng():
    state = torch.random.get_rng_state()
    for build in (
        lambda: lookup.CardLookup(3),
        lambda: lookup.CardLookup(2, 0),
        lambda: TransformerDecoderBlock(8, 2, 0),
        lambda: seq2seq.Seq2Seq(10, 10, 8, 8, attn_dim=0),
    ):
        with pytest.raises((ValueError, TypeError)):
            build()
    assert torch.equal(state, torch.random.get_rng_state())


def test_every_module_of_the_package_restores_the_rng_when_refused():
    import importlib
    import inspect
    import pkgutil

    unguarded = []
    for info in pkgutil.walk_packages(attnbook.__path__, "attnbook."):
        if ".widgets" in info.name or ".train" in info.name:
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, torch.nn.Module)
                and obj.__module__ == module.__name__
                and "__init__" in vars(obj)
                and not hasattr(obj.__init__, "__wrapped__")
            ):
                unguarded.append(f"{info.name}.{name}")
    assert not unguarded


# The book's seeded builders, from several threads at once.
@pytest.mark.parametrize(
    "build",
    ["build_date_transformer", "placement_classifier"],
)
def test_seeded_builders_are_thread_safe(build):
    if build == "build_date_transformer":
        from attnbook.tasks.date_transformer import build_date_transformer

        def make(seed):
            return build_date_transformer(seed=seed).state_dict()
    else:
        from attnbook.experiments.norm_placement import placement_classifier

        def make(seed):
            return placement_classifier("pre-LN", seed=seed).state_dict()

    same_weights_in_threads(make, range(3))
