"""Loading the weights the package ships, checked against a SHA-256 pinned in
the code.

Every ``pretrained_*`` loader goes through ``load_pinned``: a file whose bytes
do not match the digest written next to its loader (flipped bytes, a truncated
copy, a file from another training run) is refused with a clear error instead
of being loaded. ``torch.load`` runs with ``weights_only=True``: a weight file
can hold tensors and plain containers, never code.
"""

import hashlib
import io
from importlib import resources


def sha256_of(data: bytes) -> str:
    """The hex SHA-256 digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def read_pinned(filename: str, sha256: str) -> bytes:
    """The bytes of ``attnbook/data/<filename>``, after checking them against
    ``sha256``.

    Raises ``FileNotFoundError`` if the file is missing and ``ValueError`` if
    its digest differs from the pinned one (the message names both digests and
    the file's size).
    """
    source = resources.files("attnbook") / "data" / filename
    if not source.is_file():
        problem = "is not a file" if source.is_dir() else "is missing"
        raise FileNotFoundError(
            f"the shipped weight file attnbook/data/{filename} {problem}"
        )
    data = source.read_bytes()
    found = sha256_of(data)
    if found != sha256:
        raise ValueError(
            f"attnbook/data/{filename} ({len(data):,} bytes) has SHA-256 "
            f"{found}, but the code pins "
            f"{sha256}: the file is damaged or comes from another training "
            "run; reinstall attnbook "
            "or retrain it with its attnbook.train script and update the "
            "pinned digest"
        )
    return data


def load_pinned(filename: str, sha256: str):
    """``torch.load`` (``weights_only=True``) of a shipped file whose
    SHA-256 matches ``sha256``."""
    import torch

    data = read_pinned(filename, sha256)
    try:
        return torch.load(
            io.BytesIO(data), map_location="cpu", weights_only=True
        )
    # A file with the right digest but unreadable: report it plainly, without
    # torch's advice to load it with weights_only=False (never do that).
    except Exception as error:
        raise ValueError(
            f"attnbook/data/{filename} could not be read as saved weights "
            f"({type(error).__name__}); reinstall attnbook"
        ) from None


def weights_digest(model) -> str:
    """A short SHA-256 of a module's serialised weights: equal digests =
    bit-identical weights."""
    import torch

    buffer = io.BytesIO()
    torch.save(
        {
            name: tensor.contiguous()
            for name, tensor in model.state_dict().items()
        },
        buffer,
    )
    return hashlib.sha256(buffer.getvalue()).hexdigest()[:16]
