"""Static figures are sharp 2x PNGs shown at 1x, at most a column wide, with legible text.

Part 1 tests ``attnbook.display.figures.sharp_png`` (what ``sharp_figures`` registers with IPython)
on small figures whose sizes are worked out by hand. Part 2 reads every ``image/png`` output
stored in the chapter notebooks (``book/`` or the folder in ``ATTNBOOK_NOTEBOOKS``, e.g.
executed copies) and checks its size and the smallest text that ``sharp_png`` recorded.
"""

import base64
import json
import os
import struct
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnbook.display.figures import (
    BOOK_COLUMN_PX,
    MIN_TEXT_PX,
    sharp_png,
    smallest_text_px,
)  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = Path(os.environ.get("ATTNBOOK_NOTEBOOKS", ROOT / "book"))


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


def full_axes_figure(width_in, height_in, dpi, fontsize):
    """A figure whose only drawn area is one frameless axes filling it, with one text of ``fontsize`` pt.

    Its tight bounding box is the figure plus matplotlib's 0.1 in padding on each side.
    """
    fig = plt.figure(figsize=(width_in, height_in), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.add_patch(
        plt.Rectangle((0, 0), 1, 1, color="0.9", transform=ax.transAxes)
    )
    ax.text(0.5, 0.5, "text", fontsize=fontsize, ha="center", va="center")
    return fig


# --- 1. the formatter on small figures --------------------------------------------------------


def test_png_is_twice_the_size_it_is_shown_at():
    fig = full_axes_figure(3, 2, dpi=100, fontsize=10)
    png, metadata = sharp_png(fig)
    width, height = png_size(png)
    # 3.2 x 2.2 in (0.1 in padding) at 100 CSS px per inch: 320 x 220 at 1x, 640 x 440 pixels.
    assert (metadata["width"], metadata["height"]) == (
        pytest.approx(320, abs=1),
        pytest.approx(220, abs=1),
    )
    assert (
        abs(width - 2 * metadata["width"]) <= 1
        and abs(height - 2 * metadata["height"]) <= 1
    )
    # 10 pt at 100 px per inch is 10 / 72 * 100 = 13.89 px.
    assert metadata["attnbook"]["smallest_text_px"] == pytest.approx(
        10 / 72 * 100, abs=0.01
    )
    json.dumps(metadata)  # stored in the notebook
    plt.close(fig)


def test_wide_figure_is_drawn_one_column_wide():
    fig = full_axes_figure(10, 3, dpi=100, fontsize=6)
    png, metadata = sharp_png(fig)
    width, height = png_size(png)
    assert metadata["width"] == BOOK_COLUMN_PX == 672
    assert (
        abs(width - 2 * BOOK_COLUMN_PX) <= 1
        and abs(height - 2 * metadata["height"]) <= 1
    )
    # 10.2 in shown 672 px wide: 672 / 10.2 = 65.9 px per inch, so 6 pt is 6 / 72 * 65.9 = 5.49 px
    # and the height 3.2 in is 211 px.
    assert metadata["height"] == pytest.approx(3.2 * 672 / 10.2, abs=1)
    assert metadata["attnbook"]["smallest_text_px"] == pytest.approx(
        6 / 72 * 672 / 10.2, abs=0.02
    )
    assert metadata["attnbook"]["smallest_text_px"] < MIN_TEXT_PX
    plt.close(fig)


def test_smallest_text_of_known_font_sizes():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_title("title", fontsize=12)
    ax.set_xlabel("x", fontsize=11)
    ax.tick_params(labelsize=9)
    ax.text(0.5, 0.5, "note", fontsize=10)
    fig.canvas.draw()
    # The figure shown 288 px wide: 72 px per inch, so a point is a pixel and 9 pt is 9 px.
    assert smallest_text_px(fig, 288) == pytest.approx(9.0)
    # Shown 200 px wide: 50 px per inch, 9 pt is 9 / 72 * 50 = 6.25 px.
    assert smallest_text_px(fig, 200) == pytest.approx(6.25)
    ax.text(0.1, 0.1, "", fontsize=3)  # empty text is not text on screen
    invisible = ax.text(0.2, 0.2, "hidden", fontsize=4)
    invisible.set_visible(False)
    assert smallest_text_px(fig, 288) == pytest.approx(9.0)
    plt.close(fig)


def test_six_point_text_is_flagged():
    # At 72 dpi one point is one CSS pixel: 6-pt tick labels are 6 px on screen.
    fig, ax = plt.subplots(figsize=(4, 3), dpi=72)
    ax.plot([0, 1, 2], [1, 0, 1])
    ax.tick_params(labelsize=6)
    _, metadata = sharp_png(fig)
    assert metadata["width"] <= 4 * 72
    assert metadata["attnbook"]["smallest_text_px"] == pytest.approx(6.0)
    assert metadata["attnbook"]["smallest_text_px"] < MIN_TEXT_PX
    plt.close(fig)


def test_empty_figure_gives_no_image():
    fig = plt.figure()
    assert sharp_png(fig) is None
    plt.close(fig)


# --- 2. the figures stored in the chapter notebooks -------------------------------------------


def chapter_notebooks():
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def stored_figures(path: Path):
    """(where, png bytes, png metadata) for every image/png output of a notebook's cells."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        name = (
            cell["metadata"]
            .get("mystnb", {})
            .get("figure", {})
            .get("name", "no caption name")
        )
        for output in cell.get("outputs", []):
            if "image/png" in output.get("data", {}):
                where = f"{path.name} cell {index} ({name})"
                png = base64.b64decode(output["data"]["image/png"])
                yield (
                    where,
                    png,
                    output.get("metadata", {}).get("image/png", {}),
                )


def test_there_are_chapter_notebooks():
    assert len(chapter_notebooks()) >= 11, (
        f"chapter notebooks missing in {NOTEBOOKS}"
    )


@pytest.mark.parametrize(
    "path", chapter_notebooks(), ids=lambda path: path.stem
)
def test_stored_figures_are_sharp_and_legible(path):
    problems = []
    figures = list(stored_figures(path))
    for where, png, metadata in figures:
        if "width" not in metadata or "height" not in metadata:
            problems.append(
                f"{where}: no width/height output metadata (run the chapter with sharp_figures())"
            )
            continue
        width, height = png_size(png)
        if (
            abs(width - 2 * metadata["width"]) > 1
            or abs(height - 2 * metadata["height"]) > 1
        ):
            problems.append(
                f"{where}: PNG {width}x{height} is not 2x {metadata['width']}x{metadata['height']}"
            )
        if metadata["width"] > BOOK_COLUMN_PX:
            problems.append(
                f"{where}: {metadata['width']} px wide, wider than the {BOOK_COLUMN_PX} px column"
            )
        text = metadata.get("attnbook", {}).get("smallest_text_px", "missing")
        if text == "missing":
            problems.append(
                f"{where}: no attnbook.smallest_text_px in its metadata"
            )
        elif text is not None and text < MIN_TEXT_PX:
            problems.append(
                f"{where}: smallest text {text} px < {MIN_TEXT_PX} px"
            )
    assert problems == [], "\n".join(problems)


def test_drawing_helpers_want_an_axes():
    """Probe findings: ax=None or a module reached AttributeErrors."""
    from attnbook.display.diagrams import weight_line
    from attnbook.display.figures import label_log_axis, require_axes

    for ax in (None, 3, object()):
        with pytest.raises(TypeError, match="ax must be a matplotlib Axes"):
            require_axes(ax)
        with pytest.raises(TypeError, match="ax"):
            label_log_axis(ax)
        with pytest.raises(TypeError, match="ax"):
            weight_line(ax, (0, 0), (1, 1), 0.5)
