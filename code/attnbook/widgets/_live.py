"""The one builder every explorer uses: controls above, a redrawn figure below."""

import matplotlib.pyplot as plt


def figure_explorer(controls: dict, draw):
    """Wire ipywidgets ``controls`` (name -> widget) to ``draw(**values) -> Figure``.

    Returns a VBox of the controls and an Output that shows the figure for the
    current values and is redrawn whenever a control changes.
    """
    import ipywidgets as widgets
    from IPython.display import display

    output = widgets.Output()

    def redraw(_change=None):
        figure = draw(**{name: control.value for name, control in controls.items()})
        with output:
            output.clear_output(wait=True)
            display(figure)
        plt.close(figure)

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return widgets.VBox([widgets.HBox(list(controls.values())), output])
