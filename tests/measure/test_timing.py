"""attnbook.measure.timing: side-by-side timing and the extra peak memory of one call."""

import time

import pytest
import torch

from attnbook.experiments.attention_memory import peak_memory
from attnbook.measure.memory import score_matrix_bytes
from attnbook.measure.timing import (
    calls_per_sample,
    interleaved_medians,
    mean_call_time,
    median_call_time,
)


def test_looped_timing_makes_samples_long_enough():
    count = []
    number = calls_per_sample(lambda: count.append(1), min_seconds=1e-3)
    assert number >= 1 and len(count) == 1  # one warm-up call
    assert mean_call_time(lambda: count.append(1), 7) >= 0 and len(count) == 8
    # A call that sleeps ~2 ms: its median time is at least that, and not absurdly more.
    import time

    slept = median_call_time(
        lambda: time.sleep(0.002), repeats=3, min_seconds=1e-3
    )
    assert 0.0019 <= slept < 0.05


def test_peak_memory_of_training_keeps_the_recomputing_backward_small():
    """Forward + backward: autograd through plain attention keeps the n x n weights (and makes their
    gradient); the recomputing backward never holds more than one block."""
    n = 4096
    memory = peak_memory(
        ["attention", "chunked_attention", "chunked_attention_autograd"],
        [n],
        backward=True,
    )
    assert (
        memory["attention"][n] >= 2 * n * n * 4
    )  # the saved weights and the gradient of the scores
    assert memory["chunked_attention"][n] < memory["attention"][n] / 8
    # Differentiating through the blocks stores every block's weights: the n x n matrix is back.
    assert memory["chunked_attention_autograd"][n] >= n * n * 4


def test_saved_for_backward_counts_each_storage_once():
    from attnbook import attention, chunked_attention
    from attnbook.measure.memory import saved_for_backward

    n, d = 256, 16
    generator = torch.Generator().manual_seed(0)
    q, k, v = (
        torch.randn(n, d, generator=generator, requires_grad=True)
        for _ in range(3)
    )
    matrix = n * n * 4
    # Plain attention keeps its n x n weights once (the softmax's output, also the input of P @ V)
    # and the scaled queries; the scores S are not kept.
    plain = saved_for_backward(
        lambda: attention(q, k, v)[0], exclude=(q, k, v)
    )
    assert plain["largest"] == matrix and plain["bytes"] == matrix + n * d * 4
    # The recomputing backward keeps the output and one log-sum-exp per query: no n x n matrix.
    recomputing = saved_for_backward(
        lambda: chunked_attention(q, k, v, chunk_size=32), exclude=(q, k, v)
    )
    assert recomputing["bytes"] == n * d * 4 + n * 4
    # Autograd through the blocks keeps every block's weights: the whole matrix, in pieces.
    through = saved_for_backward(
        lambda: chunked_attention(
            q, k, v, chunk_size=32, recompute_backward=False
        ),
        exclude=(q, k, v),
    )
    assert through["bytes"] >= matrix and through["largest"] < matrix


def test_score_matrix_bytes_is_n_squared_times_item_size():
    assert score_matrix_bytes(8192, 8192) == 8192 * 8192 * 4
    assert score_matrix_bytes(8192, 8192, chunk_size=1024) == 8192 * 1024 * 4
    assert (
        score_matrix_bytes(100, 50, chunk_size=1024, dtype=torch.float16)
        == 100 * 50 * 2
    )
    with pytest.raises(
        ValueError, match="n_q must be a non-negative int, got -1"
    ):
        score_matrix_bytes(-1, 4)


def test_interleaved_medians_measures_every_function():
    calls = []
    medians = interleaved_medians(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
        repeats=3,
        warmup=1,
    )
    assert set(medians) == {"a", "b"} and all(t >= 0 for t in medians.values())
    assert calls == [
        "a",
        "b",
        "a",
        "b",
        "b",
        "a",
        "a",
        "b",
    ]  # warm-up, then the order rotates
    with pytest.raises(
        ValueError, match="repeats must be a positive int, got 0"
    ):
        interleaved_medians({"a": lambda: None}, repeats=0)


def test_peak_memory_sees_the_n_squared_matrix():
    """In a fresh process the plain call needs at least its n x n float32 weights; chunked needs far less."""
    n = 4096
    memory = peak_memory(
        ["attention", "chunked_attention"], [n], chunk_size=128
    )
    assert memory["attention"][n] >= score_matrix_bytes(n, n)
    assert memory["chunked_attention"][n] < memory["attention"][n] / 4
    with pytest.raises(ValueError, match="method must be one of"):
        peak_memory("flash", [n])
    with pytest.raises(
        ValueError, match="sizes must be a non-empty list of lengths >= 8"
    ):
        peak_memory("attention", [])


def test_interleaved_medians_uses_the_clock_it_is_given():
    ticks = iter(range(100))
    fake_clock = lambda: 10.0 * next(ticks)  # noqa: E731  (each reading 10 s after the last)
    medians = interleaved_medians(
        {"a": lambda: None, "b": lambda: None},
        repeats=3,
        warmup=0,
        clock=fake_clock,
    )
    assert medians == {"a": 10.0, "b": 10.0}
    busy = interleaved_medians(
        {"spin": lambda: sum(range(20000))},
        repeats=3,
        warmup=0,
        clock=time.thread_time,
    )
    assert busy["spin"] >= 0


def test_timings_refuse_a_count_that_would_run_for_hours():
    from attnbook.experiments.complexity import median_forward_time
    from attnbook.measure.timing import (
        interleaved_medians,
        mean_call_time,
        median_call_time,
    )

    def noop():
        return None

    calls = [
        (lambda: mean_call_time(noop, 10**12), "number"),
        (lambda: median_call_time(noop, repeats=10**12), "repeats"),
        (lambda: interleaved_medians({"a": noop}, repeats=10**12), "repeats"),
        (lambda: interleaved_medians({"a": noop}, warmup=10**12), "warmup"),
        (
            lambda: median_forward_time(
                torch.nn.Identity(), torch.randn(2, 3), repeats=10**12
            ),
            "repeats",
        ),
    ]
    for call, name in calls:
        with pytest.raises(
            ValueError, match=rf"{name} = 1000000000000 is more than 1,000,000"
        ):
            call()
    assert mean_call_time(noop, 3) >= 0


def test_require_count_checks_its_minimum():
    from attnbook.measure.timing import require_count

    assert require_count("repeats", 3, minimum=2) == 3
    for minimum in (None, "3", 2.5, True):
        with pytest.raises(TypeError, match="minimum"):
            require_count("repeats", 3, minimum=minimum)


def test_peak_memory_keeps_one_measuring_process_between_calls():
    """Importing torch costs more than a small measurement: on Linux one
    process serves the calls one after another; a request that fails there
    raises and leaves it serving, and a closed one is started again."""
    import os

    from attnbook.experiments import attention_memory

    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("one process per call where the peak cannot be reset")
    worker = attention_memory._MEASURING_PROCESS
    attention_memory.start_measuring_process()  # returns before it is ready
    process = worker._process
    attention_memory.start_measuring_process()  # already running: kept
    assert worker._process is process
    first = peak_memory("attention", [64], d=8)
    assert process is not None and process.poll() is None
    with pytest.raises(RuntimeError, match="memory measurement failed"):
        peak_memory("attention", [64], d=8, dtype="int64")
    second = peak_memory("chunked_attention", [64], d=8, backward=True)
    assert worker._process is process  # the same process served all three
    assert set(first) == {"attention"} and set(second) == {"chunked_attention"}
    assert first["attention"][64] >= 0 and second["chunked_attention"][64] >= 0
    worker.close()
    assert process.poll() is not None  # ended when its input closed
    assert peak_memory("attention", [64], d=8)["attention"][64] >= 0
    assert worker._process is not process
