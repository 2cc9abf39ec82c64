"""Chapter 12 explorer: temperature, top-k and top-p reshape the
distribution the next character is drawn from."""

import matplotlib.pyplot as plt
import torch

from .._checks import require_int_in, require_text
from ..core.sampling import check_sampling
from ..tasks.text import VOCAB
from ._explorer import buttons_explorer
from ._live import draws_view

PROMPTS = ("Return the ", "If the file does not ex", "This module provides ")
TEMPERATURES = (0.0, 0.5, 1.0, 1.5)
TOP_KS = (None, 3, 10)
TOP_PS = (None, 0.5, 0.9)
SHOWN = 16  # bars: the characters the model finds most likely
SAMPLE_LENGTH = 48  # characters sampled under the current setting
_VISIBLE = {" ": "\u2423", "\n": "\u23ce"}  # space and newline, made visible


def visible(text: str) -> str:
    """``text`` with spaces shown as ␣ and newlines as ⏎."""
    require_text("text", text)
    return "".join(_VISIBLE.get(c, c) for c in text)


def decoding_view(
    lm,
    prompt: str = PROMPTS[0],
    temperature=1.0,
    top_k=None,
    top_p=None,
    seed: int = 0,
) -> dict:
    """What the explorer shows for one setting of its controls.

    lm: a ``PretrainedLanguageModel``. Returns a dict with the ``SHOWN``
    characters the model finds most likely after ``prompt`` (``chars``), their
    probabilities under the model (``model``, temperature 1, no filter) and
    under the setting's sampling distribution (``sampled``); ``kept``, how
    many of the 96 characters the setting can draw, and ``mass_outside``,
    the sampling probability of characters not shown; and ``continuation``,
    ``SAMPLE_LENGTH`` characters drawn with ``seed``.
    """
    if not hasattr(lm, "next_char_distribution"):
        raise TypeError(
            f"lm must be a PretrainedLanguageModel, got {type(lm).__name__}"
        )
    require_text("prompt", prompt)
    check_sampling(temperature, top_k, top_p)
    require_int_in("seed", seed, 0, 2**63 - 1)
    model = lm.next_char_distribution(prompt)
    sampled = lm.next_char_distribution(prompt, temperature, top_k, top_p)
    order = model.argsort(descending=True, stable=True)[:SHOWN]
    return {
        "prompt": prompt,
        "setting": (temperature, top_k, top_p),
        "chars": [VOCAB[i] for i in order.tolist()],
        "model": model[order].tolist(),
        "sampled": sampled[order].tolist(),
        "kept": int((sampled > 0).sum()),
        "mass_outside": max(0.0, 1.0 - sampled[order].sum().item()),
        "continuation": lm.generate(
            prompt, SAMPLE_LENGTH, temperature, top_k, top_p, seed
        ),
    }


def _setting_text(view: dict) -> str:
    temperature, top_k, top_p = view["setting"]
    if temperature == 0:
        return "greedy (T = 0): one character kept"
    k = "off" if top_k is None else top_k
    p = "off" if top_p is None else f"{top_p:g}"
    return (
        f"T = {temperature:g}, top-k {k}, top-p {p}: {view['kept']} of "
        f"{len(VOCAB)} characters kept"
    )


@draws_view
def plot_decoding(view: dict):
    """Bars: the model's probabilities of the most likely next characters
    (grey) and the distribution the setting samples from (blue); below,
    what that setting writes."""
    fig, ax = plt.subplots(figsize=(9, 3.6))
    x = torch.arange(SHOWN).tolist()
    width = 0.4
    ax.bar([i - width / 2 for i in x], [0] * SHOWN, width, color="0.7")
    ax.bar([i + width / 2 for i in x], [0] * SHOWN, width, color="C0")
    ax.set_ylim(0, 1.02)
    ax.set_xlim(-0.7, SHOWN - 0.3)
    ax.set_xticks(x)
    ax.set_ylabel("probability of the next character")
    ax.legend(
        ["model (T = 1, no filter)", "sampled from"],
        loc="upper right",
        fontsize=8,
    )
    ax.set_title(" ", fontsize=9)
    fig.text(0.08, 0.04, " ", fontsize=9, family="monospace")
    fig.subplots_adjust(left=0.08, right=0.98, top=0.9, bottom=0.25)
    update_decoding_figure(fig, view)
    return fig


@draws_view
def update_decoding_figure(fig, view: dict) -> list:
    """Show ``view`` in a figure made by ``plot_decoding``; returns the
    artists that changed (the axes: its tick labels follow the prompt)."""
    (ax,) = fig.axes
    model_bars, sampled_bars = ax.containers
    for bar, p in zip(model_bars, view["model"]):
        bar.set_height(p)
    for bar, p in zip(sampled_bars, view["sampled"]):
        bar.set_height(p)
    ax.set_xticklabels([visible(c) for c in view["chars"]])
    outside = view["mass_outside"]
    note = (
        f"; {outside:.2f} on characters not shown" if outside >= 5e-3 else ""
    )
    ax.set_title(f"after {visible(view['prompt'])!r}: {_setting_text(view)}"
                 f"{note}", fontsize=9)  # fmt: skip
    (writes,) = fig.texts
    text = view["prompt"] + view["continuation"]
    writes.set_text("writes (seed 0): " + visible(text)[:72])
    return [ax, writes]


def decoding_explorer(
    lm=None,
    prompt: str = PROMPTS[0],
    temperature: float = 1.0,
    top_k=None,
    top_p=None,
):
    """Menus for the prompt, the temperature, top-k and top-p; redraws the
    next character's distribution and a sampled continuation.

    lm: a ``PretrainedLanguageModel`` (default: the book's).
    """
    if lm is None:
        from ..tasks.language_model import pretrained_language_model

        lm = pretrained_language_model()
    options = {
        "prompt": [(visible(p), p) for p in PROMPTS],
        "temperature": [(f"{t:g}", t) for t in TEMPERATURES],
        # 0 stands for "off" (None): a widget's value cannot be None
        "top_k": [("off", 0)] + [(str(k), k) for k in TOP_KS[1:]],
        "top_p": [("off", 0)] + [(f"{p:g}", p) for p in TOP_PS[1:]],
    }
    labels = {
        "prompt": "prompt",
        "temperature": "temperature",
        "top_k": "top-k",
        "top_p": "top-p",
    }
    first = {
        "prompt": prompt,
        "temperature": temperature,
        "top_k": top_k or 0,
        "top_p": top_p or 0,
    }

    def view(prompt, temperature, top_k, top_p):
        return decoding_view(
            lm, prompt, temperature, top_k or None, top_p or None
        )

    return buttons_explorer(
        options,
        labels,
        first,
        "temperature",
        view,
        plot_decoding,
        update_decoding_figure,
    )
