"""Random state: the package never moves the reader's random stream.

Modules draw their initial weights from torch's global generator inside
``seeded``; data comes from explicit ``torch.Generator`` objects; a refused
constructor puts the global state back (``restores_rng_on_error``).
"""

import functools
import threading
from contextlib import contextmanager

import torch

from ._checks import require_int


def keep_global_rng():
    """A context manager that restores torch's global (CPU) random state on
    exit.

    Library code that initialises modules or seeds torch leaves the reader's
    random stream as it found it, so a chapter's numbers never depend on which
    cells ran before.
    """
    return torch.random.fork_rng(devices=[])


# torch's global generator is shared by every thread: a seeded build holds
# this lock, so two threads never seed and draw from it at once.
_GLOBAL_RNG_LOCK = threading.RLock()


def seeded_generator(seed) -> torch.Generator:
    """A new ``torch.Generator`` seeded ``seed``, an int >= 0 (a
    ``ValueError`` naming seed otherwise)."""
    require_int("seed", seed, minimum=0)
    return torch.Generator().manual_seed(seed)


@contextmanager
def seeded(seed: int):
    """Build with torch's global generator seeded ``seed``, then restore it.

    Modules draw their initial weights from the global generator; inside this
    context the draws are ``seed``'s, whatever other threads do (they wait),
    and the caller's random stream is left as it was.
    """
    require_int("seed", seed, minimum=0)
    with _GLOBAL_RNG_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def restores_rng_on_error(init):
    """Decorate a module's ``__init__``: if it raises (a refused argument,
    a failed allocation), torch's global random state is put back as it was
    before the weights drawn so far."""

    @functools.wraps(init)
    def wrapper(*args, **kwargs):
        state = torch.get_rng_state()
        try:
            return init(*args, **kwargs)
        except Exception:
            torch.set_rng_state(state)
            raise

    return wrapper


def require_generator(name: str, generator, allow_none: bool = False):
    """A ``torch.Generator`` (or None if ``allow_none``): ``TypeError``
    otherwise."""
    if generator is None and allow_none:
        return None
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"{name} must be a torch.Generator, got {type(generator).__name__}"
        )
    return generator
