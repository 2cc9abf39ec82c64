"""JupyterLab as `make lab` starts it on book/ (`jupyter lab
--config=lab/jupyter_lab_config.py`).

tests/book/test_lab.py starts Lab with this same file, so what it checks is
what a reader gets.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)

# The file browser shows the chapters and the back matter: no folder whose name
# starts with "_" (build output, should one appear in book/), besides Jupyter's
# own defaults.
c.ContentsManager.hide_globs = [
    "__pycache__",
    "*.pyc",
    "*.pyo",
    ".DS_Store",
    "*~",
    "_*",
    "*.egg-info",
]

# No "Would you like to get notified about official Jupyter news?" pop-up, and
# no request for news or updates to jupyter.org: the news feed is off on the
# server, the announcements plugin is disabled (settings/page_config.json) and
# the notification defaults say no (settings/overrides.json).
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = (
    "jupyterlab.handlers.announcements.NeverCheckForUpdate"
)
c.LabApp.app_settings_dir = str(HERE / "settings")
# settings/page_config.json also disables the cell toolbar (the small icons
# over the active cell): with a markdown cell active it reads the rendered
# markdown node that jupyterlab-myst does not create, and raises a TypeError
# whenever the notebook changes (e.g. on Run All right after opening).

# The book's own small extension (labextensions/attnbook-lab): numbered figure
# references and chapter titles where jupyterlab-myst leaves a bare label, and
# code blocks (show_source listings) in the code editor's syntax colours.
c.LabApp.extra_labextensions_path = [str(HERE / "labextensions")]
