"""Comparing explorer pictures pixel by pixel (shared by the explorer tests).

Two renderings of one state match when no pixel's colour differs by more than 40 (of
255) in any channel: that allows for antialiasing and nothing else, while a stale
title, a missing bar or a moved frame changes hundreds of pixels.
"""

import base64
import io

import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from attnbook.widgets._live import figure_output

TOLERANCE = 40


def pixels(output: dict) -> np.ndarray:
    """The RGB pixels (height, width, 3) of a display_data output's PNG."""
    png = base64.b64decode(output["data"]["image/png"])
    return np.asarray(
        Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16
    )


def differing_pixels(first: dict, second: dict) -> int:
    """How many pixels of two same-size PNG outputs differ by more than ``TOLERANCE`` in some channel."""
    a, b = pixels(first), pixels(second)
    assert a.shape == b.shape, (
        f"pictures of different sizes: {a.shape} vs {b.shape}"
    )
    return int((np.abs(a - b).max(axis=-1) > TOLERANCE).sum())


def drawn_in_full(plot, *args, **kwargs) -> dict:
    """The PNG output of a fresh figure ``plot(*args, **kwargs)``, drawn in full as an explorer renders it."""
    figure = plot(*args, **kwargs)
    try:
        return figure_output(figure)
    finally:
        plt.close(figure)
