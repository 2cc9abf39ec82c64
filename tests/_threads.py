"""Seeded builds from several threads at once, shared by the tests of
attnbook._random, the experiments and the random-state contract."""

import torch


def same_weights_in_threads(make, seeds, rounds=3):
    """Build ``make(seed)`` for every seed from one thread each, ``rounds``
    times; assert every build equals the serial one and the caller's RNG is
    unchanged."""
    import threading

    expected = [make(seed) for seed in seeds]
    results = [None] * len(seeds)
    state = torch.get_rng_state()

    def work(i, seed):
        for _ in range(rounds):
            results[i] = make(seed)

    threads = [
        threading.Thread(target=work, args=(i, s)) for i, s in enumerate(seeds)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for got, want in zip(results, expected):
        assert all(torch.equal(got[k], want[k]) for k in want)
    assert torch.equal(state, torch.get_rng_state())
