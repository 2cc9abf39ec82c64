"""The chapter-13 explorer: the cache-size view, its figure and builder."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnbook.widgets.kv_cache import (  # noqa: E402
    HEAD_DIM,
    LAYERS,
    WEIGHTS_BYTES,
    kv_cache_explorer,
    kv_cache_view,
    plot_kv_cache,
)


@pytest.mark.parametrize("kv_heads", [32, 8, 4, 1])
def test_bytes_are_keys_and_values_of_every_layer_and_position(kv_heads):
    view = kv_cache_view(kv_heads, 0, 4096, 80)
    by_hand = 2 * LAYERS * kv_heads * 4096 * HEAD_DIM * 2  # bfloat16
    assert view["bytes"] == by_hand
    assert view["per_token"] * 4096 == by_hand
    assert view["batch"] == (80 * 10**9 - WEIGHTS_BYTES) // by_hand


def test_sharing_divides_and_a_window_caps_the_cache():
    mha = kv_cache_view(32, 0, 131072, 80)
    gqa = kv_cache_view(8, 0, 131072, 80)
    windowed = kv_cache_view(8, 4096, 131072, 80)
    assert mha["bytes"] == 4 * gqa["bytes"]
    assert gqa["bytes"] == 32 * windowed["bytes"]  # 131,072 / 4,096
    assert windowed["curve"][-1] == windowed["curve"][-3]  # flat past 4k
    assert mha["batch"] == 0 < gqa["batch"] < windowed["batch"]


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(num_kv_heads=3), "num_kv_heads"),
        (dict(num_kv_heads=0), "num_kv_heads"),
        (dict(window=-1), "window"),
        (dict(context=0), "context"),
        (dict(memory_gb=1.5), "memory_gb"),
    ],
)
def test_bad_settings_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        kv_cache_view(**kwargs)


def test_plot_shows_the_view():
    view = kv_cache_view(4, 0, 32768, 24)
    fig = plot_kv_cache(view)
    (ax,) = fig.axes
    _, curve, point, free = ax.lines
    assert list(point.get_ydata()) == [view["bytes"] / 2**30]
    assert free.get_ydata()[0] == view["free_bytes"] / 2**30
    assert f"{view['batch']:,} sequences fit" in ax.get_title()
    plt.close(fig)


def test_builder_redraws_when_a_control_moves():
    box = kv_cache_explorer()
    controls, output = box.children
    kv_heads = controls.children[0]
    before = output.outputs
    kv_heads.value = 1
    assert output.outputs != before


def test_a_local_global_pattern_keeps_every_position_in_its_global_layers():
    n, w = 131072, 1024
    view = kv_cache_view(8, w, n, 80, local_per_global=5)
    per_position = 2 * 8 * HEAD_DIM * 2  # keys and values, bfloat16
    global_layers = LAYERS // 6  # 5 local layers, then 1 global, repeated
    by_hand = per_position * (global_layers * n + (LAYERS - global_layers) * w)
    assert view["bytes"] == by_hand
    every_layer = kv_cache_view(8, w, n, 80)
    assert every_layer["bytes"] < view["bytes"] < kv_cache_view(8)["bytes"] * 4


@pytest.mark.parametrize("bits, share", [(8, 2), (4, 4)])
def test_fewer_bits_divide_the_cache(bits, share):
    full = kv_cache_view(8, 0, 32768, 80)
    small = kv_cache_view(8, 0, 32768, 80, cache_bits=bits)
    assert small["bytes"] * share == full["bytes"]
    assert small["batch"] >= share * full["batch"]


def test_the_pattern_does_nothing_without_a_window():
    assert (
        kv_cache_view(8, 0, 32768, 80, local_per_global=1)["bytes"]
        == kv_cache_view(8, 0, 32768, 80)["bytes"]
    )


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(cache_bits=12), "cache_bits"),
        (dict(local_per_global=0), "local_per_global"),
        (dict(local_per_global=32), "local_per_global"),
    ],
)
def test_bad_pattern_or_bits_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        kv_cache_view(**kwargs)
