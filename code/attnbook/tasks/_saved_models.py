"""Saving and loading the trained pointer networks (the sorter of
``sorting``, the hull pointer of ``convex_hull``): the checks before a file
is written and the one way a saved file is read (tensors only)."""

import os

import torch


def check_saving(model, path, info, model_class) -> None:
    """model a ``model_class``, path a file path, info a dict or None."""
    if not isinstance(model, model_class):
        raise TypeError(
            f"model must be a {model_class.__name__}, got "
            f"{type(model).__name__}"
        )
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise TypeError(f"path must be a file path, got {path!r:.40}")
    if info is not None and not isinstance(info, dict):
        raise TypeError(f"info must be a dict or None, got {info!r:.40}")


def read_saved(path, what: str, writer: str):
    """What ``torch.load`` reads from ``path`` (tensors only), or a
    ``ValueError`` naming ``what`` it should hold and ``writer``, the
    function that writes such files."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise TypeError(f"path must be a file path, got {path!r:.40}")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    # torch's own message would suggest weights_only=False: never do that
    except Exception as error:
        raise ValueError(
            f"{str(path):.80} could not be read as a saved {what} "
            f"(truncated, damaged, or not written by {writer}): "
            f"{type(error).__name__}"
        ) from None
