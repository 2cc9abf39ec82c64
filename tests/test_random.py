"""attnbook._random: seeded builds (in any thread) and constructors that
restore the global random state when they refuse."""

import pytest
import torch

from attnbook import _random

from _refusals import refused
from _threads import same_weights_in_threads


# A refused constructor leaves torch's global random state alone.
def test_a_constructor_that_fails_midway_restores_the_rng():
    from attnbook._random import restores_rng_on_error

    class Half(torch.nn.Module):
        @restores_rng_on_error
        def __init__(self):
            super().__init__()
            self.first = torch.nn.Linear(4, 4)  # draws weights
            raise ValueError("refused after drawing")

    state = torch.get_rng_state()
    with pytest.raises(ValueError):
        Half()
    assert torch.equal(state, torch.get_rng_state())


def test_seeded_builds_in_threads_match_the_serial_ones():
    from attnbook._random import seeded

    def build(seed):
        with seeded(seed):
            return torch.nn.Linear(64, 64).state_dict()

    same_weights_in_threads(build, range(8), rounds=20)


@pytest.mark.parametrize("seed", [2.5, True, None, "3", -1, 10**400])
def test_seeded_generator_names_the_seed(seed):
    refused(lambda: _random.seeded_generator(seed), ValueError, "seed")


def test_seeded_generator_draws_what_a_seeded_torch_generator_draws():
    a = torch.randn(5, generator=_random.seeded_generator(7))
    assert torch.equal(
        a, torch.randn(5, generator=torch.Generator().manual_seed(7))
    )
