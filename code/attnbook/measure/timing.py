"""Wall time, measured fairly.

- ``interleaved_medians`` times several functions side by side (the order
  rotates between repetitions, so a burst of load from other programs hits all
  of them alike);
- ``calls_per_sample``, ``mean_call_time`` and ``median_call_time`` time one
  fast call by looping it until a sample lasts long enough to be measured.

Compare ratios measured in one run, not absolute times: a shared machine
drifts.
"""

import math
import statistics
import time

from .._checks import require_callable, require_int, require_positive

# A timing takes a few repeats of a few calls; more than this many is a
# mistake that would run for hours, refused at once.
MOST_CALLS = 10**6


def require_count(name: str, value, minimum: int = 1) -> int:
    """An int in [minimum, ``MOST_CALLS``]: ``ValueError`` otherwise."""
    if isinstance(minimum, bool) or not isinstance(minimum, int):
        raise TypeError(f"minimum must be an int, got {minimum!r:.40}")
    require_int(name, value, minimum)
    if value > MOST_CALLS:
        raise ValueError(
            f"{name} = {str(value):.24} is more than {MOST_CALLS:,}: a "
            "timing needs a few repeats, and this many would run for hours"
        )
    return value


def interleaved_medians(
    functions: dict, repeats: int = 5, warmup: int = 1, clock=time.perf_counter
) -> dict:
    """Median time in seconds of each zero-argument function, measured side by
    side.

    Each repetition runs every function once, in an order that rotates between
    repetitions, so a change in machine load affects all of them alike; compare
    ratios of the medians rather than absolute times. ``clock`` is wall time
    (``time.perf_counter``) by default; ``time.thread_time`` measures the
    processor time of the calling thread instead, which leaves out the time the
    thread waits while other programs run (meaningful when the work runs on
    this one thread, e.g. under ``attnbook.measure.threads.single_thread``).
    """
    if not isinstance(functions, dict):
        raise TypeError(
            f"functions must be a dict {{name: zero-argument function}}, got "
            f"{type(functions).__name__}"
        )
    if not functions:
        raise ValueError("functions is empty: nothing to time")
    require_callable(clock=clock, **{str(k): f for k, f in functions.items()})
    require_count("repeats", repeats)
    require_count("warmup", warmup, minimum=0)
    names = list(functions)
    for _ in range(warmup):
        for name in names:
            functions[name]()
    samples = {name: [] for name in names}
    for repeat in range(repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            start = clock()
            functions[name]()
            samples[name].append(clock() - start)
    return {name: statistics.median(times) for name, times in samples.items()}


def calls_per_sample(function, min_seconds: float) -> int:
    """Call ``function()`` once (a warm-up) and return how many calls make a
    sample last ``min_seconds``."""
    if not callable(function):
        raise TypeError(
            f"function must be callable, got {type(function).__name__}"
        )
    require_positive("min_seconds", min_seconds)
    start = time.perf_counter()
    function()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, math.ceil(min_seconds / once))


def mean_call_time(function, number: int, clock=time.perf_counter) -> float:
    """Mean time of one ``function()`` call over ``number`` back-to-back
    calls, in seconds of ``clock``."""
    require_count("number", number)
    require_callable(function=function, clock=clock)
    start = clock()
    for _ in range(number):
        function()
    return (clock() - start) / number


def median_call_time(
    function, repeats: int = 5, min_seconds: float = 2e-3
) -> float:
    """Median over ``repeats`` samples of the time of one ``function()`` call,
    in seconds.

    Fast calls are looped so that each sample lasts at least ``min_seconds``.
    """
    require_count("repeats", repeats)
    number = calls_per_sample(function, min_seconds)
    return statistics.median(
        mean_call_time(function, number) for _ in range(repeats)
    )
