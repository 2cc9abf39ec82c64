"""Each explorer's update time: its ``*_view`` function plus its ``plot_*`` function, at default sizes.

Every module in attnbook.widgets except the private ones (``_live``) is discovered
and each ``*_view`` is paired with a ``plot_*``: ``X_view`` with ``plot_X`` when that
exists, otherwise with any plot function of the module that accepts its result.
Target: a whole update, view + plot + the PNG the live explorer sends
(``attnbook.widgets._live.figure_output``), <= 100 ms (median of repeats, after one
warm-up call that may load a model).
"""

import importlib
import inspect
import io
import pkgutil
import statistics
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

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


def _own_functions(module, test) -> dict:
    return {
        name: function
        for name, function in inspect.getmembers(module, inspect.isfunction)
        if function.__module__ == module.__name__ and test(name)
    }


def view_plot_pairs(module) -> list:
    """[(view_name, view, plot_name, plot)]: each ``*_view`` of ``module`` with the plot that draws it."""
    views = _own_functions(module, lambda name: name.endswith("_view"))
    plots = _own_functions(module, lambda name: name.startswith("plot_"))
    pairs = []
    for view_name, view in views.items():
        stem = view_name[: -len("_view")]
        if f"plot_{stem}" in plots:
            pairs.append((view_name, view, f"plot_{stem}", plots[f"plot_{stem}"]))
        else:
            for plot_name, plot in plots.items():
                pairs.append((view_name, view, plot_name, plot))
    return pairs


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
    sources = {getattr(inspect.getmodule(value), "__name__", "") for value in vars(module).values()}
    for source in sorted(s for s in sources if s.startswith("attnbook.") and not s.startswith("attnbook.widgets")):
        for class_name, cls in inspect.getmembers(importlib.import_module(source), inspect.isclass):
            if issubclass(cls, nn.Module) and cls.__module__ == source:
                try:
                    return cls().eval(), f"{name}: untrained {class_name}() of the default size"
                except TypeError:
                    continue
    raise TypeError(f"no way to build the required argument {name!r}")


def view_call(module, view):
    """view as a zero-argument function, with stand-ins for required arguments; and a note saying so."""
    required = [
        p.name for p in inspect.signature(view).parameters.values()
        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    arguments, notes = {}, []
    for name in required:
        arguments[name], note = _stand_in_model(module, name)
        notes.append(note)
    return (lambda: view(**arguments)), "; ".join(notes)


def _render(figure) -> None:
    from attnbook.widgets._live import figure_output

    figure_output(figure)


def time_pair(view, plot, repeats: int, warmup: bool = True, render: bool = True) -> dict:
    """Median ms of view(), of plot(view()) and of the PNG render, after one warm-up round."""
    samples = {"view": [], "plot": [], "render": []}
    for i in range(repeats + warmup):
        start = time.perf_counter()
        result = view()
        after_view = time.perf_counter()
        figure = plot(result)
        after_plot = time.perf_counter()
        if render:
            _render(figure)
        after_render = time.perf_counter()
        plt.close(figure)
        if i or not warmup:  # the first round is the warm-up
            samples["view"].append(after_view - start)
            samples["plot"].append(after_plot - after_view)
            samples["render"].append(after_render - after_plot)
    return {key: statistics.median(values) * 1e3 for key, values in samples.items()}


def run(quick: bool = False) -> list:
    rows = []
    repeats = 1 if quick else 7
    for module_name in widget_modules():
        short = module_name.rsplit(".", 1)[-1]
        if quick and short != "basics":  # quick: exercise the timing code on chapter 1's explorer only
            rows.append(row(NAME, f"{short}: found", None, "", "", None, "not timed in quick mode"))
            continue
        try:
            module = importlib.import_module(module_name)
        except Exception as error:  # a colleague's module that does not import is a finding, not a crash
            rows.append(row(NAME, f"{short}: import", None, "", "", False, f"{type(error).__name__}: {error}"))
            continue
        pairs = view_plot_pairs(module)
        if not pairs:
            rows.append(row(NAME, f"{short}: no *_view/plot_* pair", None, "", "", False, "nothing to time"))
        for view_name, view, plot_name, plot in pairs:
            measure = f"{short}.{view_name} + {plot_name}"
            try:
                call, note = view_call(module, view)
                times = time_pair(call, plot, repeats, warmup=not quick, render=not quick)
            except Exception as error:
                if plot_name != f"plot_{view_name[: -len('_view')]}":
                    continue  # a guessed pairing that does not fit
                rows.append(row(NAME, measure, None, "ms", f"<= {TARGET_MS:g}", False, f"{type(error).__name__}: {error}"))
                continue
            total = times["view"] + times["plot"] + times["render"]
            rows.append(row(
                NAME, measure, total, "ms", f"<= {TARGET_MS:g}", None if quick else total <= TARGET_MS,
                f"view {times['view']:.1f} + plot {times['plot']:.1f} + PNG {times['render']:.1f} ms"
                + ("; quick: one cold call, not a measurement" if quick else "")
                + (f"; {note}" if note else ""),
            ))
    return rows
