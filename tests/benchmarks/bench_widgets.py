"""Each explorer's update time: one move of one control, exactly as the live widget does it.

Every module in attnbook.widgets except the private ones (``_live``) is discovered; each
``*_explorer`` in it is built with its defaults (an untrained model of the default size
stands in for a required ``model``), and each of its controls is moved one step either
way (``control_moves``). Setting ``control.value`` runs the explorer's observers
synchronously: the view function, the redraw and the PNG that goes to the output area.
Target: the median move of the slowest control <= 100 ms (after one warm-up move per
control, which may fill a cache or load a model).
"""

import importlib
import inspect
import math
import pkgutil
import statistics
import time

import matplotlib

matplotlib.use("Agg")

from _common import row  # noqa: E402

NAME = "widgets"
TARGET_MS = 100.0


def widget_modules() -> list:
    """Names of the public modules of attnbook.widgets, e.g. ["attnbook.widgets.basics", ...]."""
    import attnbook.widgets as package

    return sorted(
        f"{package.__name__}.{info.name}"
        for info in pkgutil.iter_modules(package.__path__)
        if not info.name.startswith("_")
    )


def explorer_builders(module) -> dict:
    """{name: function}: the ``*_explorer`` functions defined in ``module``."""
    return {
        name: function
        for name, function in inspect.getmembers(module, inspect.isfunction)
        if function.__module__ == module.__name__
        and name.endswith("_explorer")
    }


def _stand_in_model(module, name: str):
    """An untrained model for a required ``model``-like argument (update time depends on size, not training).

    Looks for a zero-argument ``default_<name>``, ``_<name>`` or ``load_<name>`` in the widget
    module, then for an nn.Module class, constructible without arguments, in the attnbook
    modules the widget imports from.
    """
    from torch import nn

    for candidate in (f"default_{name}", f"_{name}", f"load_{name}"):
        factory = getattr(module, candidate, None)
        if callable(factory):
            return factory(), f"{name} from {candidate}()"
    sources = {
        getattr(inspect.getmodule(value), "__name__", "")
        for value in vars(module).values()
    }
    for source in sorted(
        s
        for s in sources
        if s.startswith("attnbook.") and not s.startswith("attnbook.widgets")
    ):
        for class_name, cls in inspect.getmembers(
            importlib.import_module(source), inspect.isclass
        ):
            if issubclass(cls, nn.Module) and cls.__module__ == source:
                try:
                    return (
                        cls().eval(),
                        f"{name}: untrained {class_name}() of the default size",
                    )
                except TypeError:
                    continue
    raise TypeError(f"no way to build the required argument {name!r}")


def build_explorer(module, builder):
    """``builder`` called with its defaults, stand-ins for required arguments; and a note saying which."""
    required = [
        p.name
        for p in inspect.signature(builder).parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    arguments, notes = {}, []
    for name in required:
        arguments[name], note = _stand_in_model(module, name)
        notes.append(note)
    return builder(**arguments), "; ".join(notes)


def explorer_controls(box) -> list:
    """The controls of a box made by ``live_explorer``: VBox[HBox(controls), Output]."""
    return list(box.children[0].children)


def control_moves(control) -> list:
    """Values one step either side of ``control``'s current value, as a reader's move would set them.

    Selection widgets (dropdowns, selection sliders): the neighbouring options. Sliders:
    one step up and down, inside the range (a log slider steps its exponent). Checkbox:
    the other state. Text: the text reversed (for the book's explorers, a list of numbers
    or letters, that is another valid input of the same length).
    """
    import ipywidgets as widgets

    value = control.value
    if isinstance(control, widgets.Checkbox):
        return [not value]
    if isinstance(control, widgets.Text):
        return [value[::-1]] if value[::-1] != value else []
    if hasattr(control, "options"):
        values = [
            option[1] if isinstance(option, tuple) else option
            for option in control.options
        ]
        at = values.index(value)
        return [values[i] for i in (at + 1, at - 1) if 0 <= i < len(values)]
    if isinstance(control, widgets.FloatLogSlider):
        here = math.log(value, control.base)
        steps = (here + control.step, here - control.step)
        return [
            control.base**e
            for e in steps
            if control.min - 1e-9 <= e <= control.max + 1e-9
        ]
    if hasattr(control, "step"):
        return [
            v
            for v in (value + control.step, value - control.step)
            if control.min <= v <= control.max
        ]
    return []


def time_moves(control, rounds: int) -> list:
    """Seconds for each move of ``control``: to each neighbour value and back, ``rounds`` times."""
    start_value, samples = control.value, []
    for _ in range(rounds):
        for value in control_moves(control):
            for target in (value, start_value):
                start = time.perf_counter()
                control.value = target
                samples.append(time.perf_counter() - start)
    return samples


def run(quick: bool = False) -> list:
    rows = []
    rounds = 1 if quick else 4
    for module_name in widget_modules():
        short = module_name.rsplit(".", 1)[-1]
        if (
            quick and short != "basics"
        ):  # quick: exercise the timing code on chapter 1's explorer only
            rows.append(
                row(
                    NAME,
                    f"{short}: found",
                    None,
                    "",
                    "",
                    None,
                    "not timed in quick mode",
                )
            )
            continue
        try:
            module = importlib.import_module(module_name)
        except Exception as error:  # a colleague's module that does not import is a finding, not a crash
            rows.append(
                row(
                    NAME,
                    f"{short}: import",
                    None,
                    "",
                    "",
                    False,
                    f"{type(error).__name__}: {error}",
                )
            )
            continue
        builders = explorer_builders(module)
        if not builders:
            rows.append(
                row(
                    NAME,
                    f"{short}: no *_explorer",
                    None,
                    "",
                    "",
                    False,
                    "nothing to time",
                )
            )
        for builder_name, builder in builders.items():
            measure = f"{short}.{builder_name}: slowest control, median move"
            try:
                box, note = build_explorer(module, builder)
                per_control = {}
                for control in explorer_controls(box):
                    if not quick:
                        time_moves(control, 1)  # warm-up
                    samples = time_moves(control, rounds)
                    if samples:
                        per_control[
                            control.description or type(control).__name__
                        ] = statistics.median(samples) * 1e3
            except Exception as error:
                rows.append(
                    row(
                        NAME,
                        measure,
                        None,
                        "ms",
                        f"<= {TARGET_MS:g}",
                        False,
                        f"{type(error).__name__}: {error}",
                    )
                )
                continue
            slowest = max(per_control.values())
            rows.append(
                row(
                    NAME,
                    measure,
                    slowest,
                    "ms",
                    f"<= {TARGET_MS:g}",
                    None if quick else slowest <= TARGET_MS,
                    ", ".join(
                        f"{name} {ms:.0f} ms"
                        for name, ms in per_control.items()
                    )
                    + (
                        "; quick: one cold round, not a measurement"
                        if quick
                        else ""
                    )
                    + (f"; {note}" if note else ""),
                )
            )
    return rows
