"""The CNN / RNN / self-attention comparison: exact counts against the real layers, timing helpers."""

import math

import pytest
import torch
from torch import nn

from attnbook.experiments.complexity import (
    ConvStack,
    RecurrentLayer,
    SelfAttentionLayer,
    comparison_layers,
    conv_layers_to_connect,
    loglog_slope,
    longest_path,
    median_forward_time,
    multiply_adds,
    sees_first_position,
    sequential_operations,
    time_layers,
)

from _refusals import refused
from _threads import same_weights_in_threads


def test_layers_keep_the_shape_of_the_sequence():
    x = torch.randn(2, 9, 4)
    for name, layer in comparison_layers(4, conv_layers=2).items():
        assert layer(x).shape == (2, 9, 4), name


def test_conv_stack_equals_conv1d_by_hand():
    torch.manual_seed(0)
    stack = ConvStack(3, num_layers=2, kernel_size=5)
    x = torch.randn(2, 7, 3)
    first, second = stack.layers
    by_hand = nn.functional.conv1d(
        x.transpose(1, 2), first.weight, first.bias, padding=2
    )
    by_hand = nn.functional.conv1d(
        torch.tanh(by_hand), second.weight, second.bias, padding=2
    )
    assert torch.allclose(stack(x), by_hand.transpose(1, 2), atol=1e-6)


def test_recurrent_layer_equals_the_elman_recursion():
    torch.manual_seed(0)
    layer = RecurrentLayer(3)
    rnn = layer.rnn
    x = torch.randn(1, 5, 3)
    h = torch.zeros(3)
    for t in range(5):
        h = torch.tanh(
            rnn.weight_ih_l0 @ x[0, t]
            + rnn.bias_ih_l0
            + rnn.weight_hh_l0 @ h
            + rnn.bias_hh_l0
        )
        assert torch.allclose(layer(x)[0, t], h, atol=1e-6)


def test_self_attention_layer_returns_the_output_of_self_attention():
    torch.manual_seed(0)
    layer = SelfAttentionLayer(4)
    x = torch.randn(2, 6, 4)
    assert torch.equal(layer(x), layer.attention(x)[0])


@pytest.mark.parametrize("kernel_size", [3, 5, 7])
@pytest.mark.parametrize("n", [2, 3, 4, 9, 10, 17])
def test_cnn_longest_path_matches_autograd(n, kernel_size):
    assert (
        conv_layers_to_connect(n, kernel_size)
        == longest_path(n, kernel_size)["CNN"]
    )


def test_one_layer_less_does_not_connect():
    depth = longest_path(11, 3)["CNN"]
    torch.manual_seed(0)
    assert not sees_first_position(ConvStack(2, depth - 1).double(), 11, 2)
    torch.manual_seed(0)
    assert sees_first_position(ConvStack(2, depth).double(), 11, 2)


def test_self_attention_connects_every_position_in_one_layer_and_a_rnn_is_causal():
    torch.manual_seed(0)
    assert sees_first_position(SelfAttentionLayer(3).double(), 50, 3)
    torch.manual_seed(0)
    rnn = RecurrentLayer(3).double()
    assert sees_first_position(rnn, 50, 3)
    # Reversed direction: the first state never sees the last input (no path at all).
    x = torch.randn(1, 6, 3, dtype=torch.float64, requires_grad=True)
    rnn(x)[0, 0].sum().backward()
    assert (x.grad[0, 1:] == 0).all()


def test_longest_path_and_sequential_operations_formulas():
    assert longest_path(4096, 3) == {
        "CNN": 4095,
        "RNN": 4096,
        "self-attention": 1,
    }
    assert longest_path(4096, 9) == {
        "CNN": 1024,
        "RNN": 4096,
        "self-attention": 1,
    }
    assert sequential_operations(100) == {
        "CNN": 1,
        "RNN": 100,
        "self-attention": 1,
    }


def test_multiply_adds_match_the_operations_counted_by_hand():
    n, d, k = 10, 4, 3
    counts = multiply_adds(n, d, k)
    conv = (
        n * d * (d * k)
    )  # every output (n x d) is a dot product of length d * k
    rnn = n * (d * d + d * d)  # W x_t and U h_{t-1} at every step
    attention = (
        3 * n * d * d + n * n * d + n * n * d
    )  # Q, K, V; Q K^T; weights @ V
    assert counts == {"CNN": conv, "RNN": rnn, "self-attention": attention}


def test_attention_products_cost_n2d_multiply_adds_each_by_torch_flop_counter():
    from torch.utils.flop_counter import FlopCounterMode

    n, d = 12, 5
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(n, d, generator=g) for _ in range(3))
    with FlopCounterMode(display=False) as counter:
        torch.softmax(q @ k.T, dim=-1) @ v
    # PyTorch counts a multiply-add as 2 FLOPs: Q K^T and P V are n^2 d multiply-adds each.
    assert counter.get_total_flops() == 2 * (n * n * d + n * n * d)
    assert (
        multiply_adds(n, d)["self-attention"] - 3 * n * d * d
        == counter.get_total_flops() // 2
    )


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: longest_path(1), ValueError, "n must be an int >= 2, got 1"),
        (lambda: longest_path(8, 4), ValueError, "kernel_size must be odd"),
        (
            lambda: longest_path(8, 1),
            ValueError,
            "kernel_size must be an int >= 3, got 1",
        ),
        (
            lambda: multiply_adds(8, 0),
            ValueError,
            "dim must be a positive int, got 0",
        ),
        (
            lambda: ConvStack(4, 0),
            ValueError,
            "num_layers must be a positive int, got 0",
        ),
        (
            lambda: time_layers([16, 0]),
            ValueError,
            "sequence length must be a positive int, got 0",
        ),
        (
            lambda: time_layers([16], statistic="mean"),
            ValueError,
            "statistic must be 'median' or 'min'",
        ),
        (
            lambda: time_layers([16], clock="cpu", threads=2),
            ValueError,
            "clock must be 'wall', or 'cpu' with threads=1",
        ),
        (
            lambda: loglog_slope([1, 2], [1.0]),
            ValueError,
            r"need as many times as lengths",
        ),
        (
            lambda: loglog_slope([1, 2], [1.0, 0.0]),
            ValueError,
            "times must be positive",
        ),
        (
            lambda: median_forward_time(
                nn.Identity(), torch.zeros(3, dtype=torch.long)
            ),
            TypeError,
            "floating-point",
        ),
    ],
)
def test_bad_arguments_raise(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_loglog_slope_recovers_a_power_law():
    lengths = [16, 64, 256, 1024]
    for power in (0.5, 1.0, 2.0):
        assert loglog_slope(
            lengths, [3e-5 * n**power for n in lengths]
        ) == pytest.approx(power)
    # Least squares, not the end points: one outlier in the middle moves it only a little.
    times = [n * 1.0 for n in lengths]
    times[1] *= 2
    assert 0.8 < loglog_slope(lengths, times) < 1.0


def test_timing_returns_positive_medians_per_layer_and_restores_threads():
    threads = torch.get_num_threads()
    times = time_layers([8, 16], dim=8, repeats=2, min_seconds=1e-4)
    assert set(times) == {"CNN", "RNN", "self-attention"}
    assert all(
        len(v) == 2 and all(t > 0 and math.isfinite(t) for t in v)
        for v in times.values()
    )
    assert torch.get_num_threads() == threads
    assert (
        median_forward_time(
            nn.Identity(), torch.zeros(3), repeats=3, min_seconds=1e-5
        )
        > 0
    )


def test_timing_statistic_picks_the_median_or_the_fastest_sample(monkeypatch):
    import attnbook.experiments.complexity as complexity

    for statistic, expected in (("median", 2.0), ("min", 1.0)):
        rounds = iter(
            [3.0] * 3 + [1.0] * 3 + [2.0] * 3
        )  # round by round, every layer once per round
        monkeypatch.setattr(
            complexity, "calls_per_sample", lambda function, min_seconds: 1
        )
        monkeypatch.setattr(
            complexity,
            "mean_call_time",
            lambda function, number, clock: next(rounds),
        )
        times = complexity.time_layers(
            [8], dim=4, repeats=3, statistic=statistic
        )
        assert times == {
            name: [expected] for name in ("CNN", "RNN", "self-attention")
        }


def test_cpu_clock_times_are_positive_and_need_one_thread():
    times = time_layers(
        [8, 16],
        dim=8,
        repeats=2,
        min_seconds=1e-4,
        clock="cpu",
        statistic="min",
    )
    assert all(
        len(v) == 2 and all(t > 0 and math.isfinite(t) for t in v)
        for v in times.values()
    )


def test_listed_formulas_still_refuse_bad_arguments():
    from attnbook import show_source

    assert "require_int" not in repr(show_source(multiply_adds))
    assert "require_int" not in repr(show_source(longest_path))
    with pytest.raises(ValueError, match="n must be an int >= 2"):
        longest_path(1)
    with pytest.raises(ValueError, match="kernel_size must be odd"):
        multiply_adds(4, 2, kernel_size=4)
    assert longest_path(n=5, kernel_size=3)["CNN"] == 4


def test_time_layers_warms_every_layer_up_before_timing(monkeypatch):
    import attnbook.experiments.complexity as complexity

    calls = []
    real = complexity.calls_per_sample

    def recording(function, min_seconds):
        calls.append(len(seen))
        return real(function, min_seconds)

    seen = []
    original = complexity.comparison_layers

    def counting_layers(*args, **kwargs):
        layers = original(*args, **kwargs)
        for layer in layers.values():
            layer.register_forward_hook(lambda *a: seen.append(1))
        return layers

    monkeypatch.setattr(complexity, "calls_per_sample", recording)
    monkeypatch.setattr(complexity, "comparison_layers", counting_layers)
    complexity.time_layers([4, 8], dim=4, repeats=1, min_seconds=1e-5)
    # 3 layers x 2 lengths x 3 warm-up calls before the first calibration
    assert calls[0] == 18


@pytest.mark.parametrize("lengths", [[4, 4, 4], [0, 4, 8], [-1, 2, 3]])
def test_loglog_slope_refuses_lengths_without_a_slope(lengths):
    from attnbook.experiments.complexity import loglog_slope

    with pytest.raises(ValueError, match="lengths"):
        loglog_slope(lengths, [1.0, 2.0, 3.0])


def test_comparison_layers_built_in_threads_match_the_serial_ones():
    from attnbook.experiments.complexity import comparison_layers

    def weights(seed):
        return comparison_layers(8, seed=seed)["RNN"].state_dict()

    same_weights_in_threads(weights, range(4), rounds=5)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(layer=None), TypeError, "layer must be callable"),
        (dict(n=0), ValueError, "n must be a positive int"),
        (dict(dim=2.5), ValueError, "dim must be a positive int"),
        (dict(seed=True), ValueError, "seed must be"),
        (dict(n=10**12), ValueError, "the input of shape"),
        (dict(layer=torch.nn.Linear(4, 4)), TypeError, "x has dtype"),
    ],
)
def test_sees_first_position_checks_its_arguments(kwargs, error, match):
    from attnbook.experiments.complexity import (
        RecurrentLayer,
        sees_first_position,
    )

    call = {"layer": RecurrentLayer(4).double(), "n": 6, "dim": 4, **kwargs}
    refused(lambda: sees_first_position(**call), error, match)


@pytest.mark.parametrize(
    "x, error, match",
    [
        (None, TypeError, "x must be a torch.Tensor"),
        (torch.randn(6, 4), ValueError, r"x must have shape \(B, n, 4\)"),
        (torch.randn(2, 6, 0), ValueError, r"x must have shape \(B, n, 4\)"),
        (torch.randn(2, 6, 4).double(), TypeError, "x has dtype"),
    ],
)
def test_the_complexity_layers_check_x(x, error, match):
    from attnbook.experiments.complexity import ConvStack, RecurrentLayer

    for layer in (RecurrentLayer(4), ConvStack(4)):
        refused(lambda: layer(x), error, match)


def test_median_forward_time_names_a_layer_that_cannot_take_x():
    layer, x = torch.nn.Linear(2, 2), torch.randn(2, 6, 4)
    state = torch.random.get_rng_state()
    with pytest.raises(ValueError, match=r"Linear\) cannot take x of shape"):
        median_forward_time(layer, x)
    assert torch.equal(torch.random.get_rng_state(), state)
