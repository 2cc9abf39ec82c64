"""Every chapter in a real JupyterLab, driven by headless Chromium.

Starts `jupyter lab` from the book's environment on 127.0.0.1 (token, temporary
config/data/runtime folders, a temporary copy of book/ so autosave cannot touch
the stored notebooks), then for each chapter: open it, run all cells, assert no
cell raised, press ArrowRight on the first slider, and assert that the widget's
figure changed. Screenshots go to _build/screenshots/lab/.
"""

import json
import os
import secrets
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, SCREENSHOTS, venv_bin

pytestmark = pytest.mark.lab

CHAPTERS = sorted(path.name for path in (ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
RUN_TIMEOUT_MS = 240_000

WAIT_FOR_RUN = """
async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.sessionContext.ready;
  await window.jupyterapp.commands.execute('notebook:run-all-cells');
  const cells = panel.content.widgets.filter(cell => cell.model.type === 'code');
  return cells.length;
}
"""

RUN_STATE = """
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = panel.content.widgets.filter(cell => cell.model.type === 'code');
  const pending = cells.filter(cell => cell.model.executionCount === null).length;
  const errors = [];
  for (const cell of cells) {
    for (const output of cell.model.outputs.toJSON()) {
      if (output.output_type === 'error') errors.push(output.ename + ': ' + output.evalue);
    }
  }
  return {status: kernel ? kernel.status : 'none', pending, errors};
}
"""

FIRST_WIDGET_OUTPUT = """
() => {
  const notebook = window.jupyterapp.shell.currentWidget.node;
  const slider = notebook.querySelector('.widget-slider');
  if (!slider) return null;
  const handle = slider.querySelector('.noUi-handle');
  if (handle) handle.setAttribute('data-first-slider-handle', 'yes');
  const box = slider.closest('.widget-vbox') || slider.closest('.jp-OutputArea-output');
  const output = box.querySelector('.widget-output');
  return output ? output.innerHTML : box.innerHTML;
}
"""


SHUT_DOWN = """
async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.sessionContext.shutdown();
}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    jupyter = venv_bin("jupyter")
    assert jupyter, "jupyter is not installed in the book's environment"
    home = tmp_path_factory.mktemp("lab")
    notebooks = home / "book"
    shutil.copytree(ROOT / "book", notebooks, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "_build"))
    token, port = secrets.token_hex(16), free_port()
    env = dict(os.environ)
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[name] = str(home / name.lower())
    # No "get notified about Jupyter news?" toast (it would fetch news from jupyter.org if accepted).
    settings = home / "jupyter_config_dir" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    process = subprocess.Popen(
        [jupyter, "lab", "--allow-root", "--no-browser", f"--IdentityProvider.token={token}",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
         f"--ServerApp.root_dir={notebooks}", "--LabApp.expose_app_in_browser=True",
         "--ContentsManager.allow_hidden=False"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(home / "lab.log", "w"),
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as response:
                json.load(response)
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"JupyterLab did not start; log:\n{(home / 'lab.log').read_text()[-3000:]}")
            time.sleep(0.3)
    yield base, token
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_and_its_explorer_reacts(chapter, lab, browser):
    base, token = lab
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page_errors = []
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    # ?reset: a fresh workspace, so earlier chapters' tabs are not restored next to this one.
    page.goto(f"{base}/lab/tree/{chapter}?reset&token={token}", wait_until="domcontentloaded")
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
        "&& window.jupyterapp.shell.currentWidget.sessionContext", timeout=60_000
    )
    page.evaluate(WAIT_FOR_RUN)
    deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
    while True:
        state = page.evaluate(RUN_STATE)
        if state["errors"] or (state["pending"] == 0 and state["status"] == "idle"):
            break
        assert time.monotonic() < deadline, f"{chapter} did not finish running: {state}"
        page.wait_for_timeout(500)
    assert state["errors"] == [], f"{chapter} raised: {state['errors']}"

    page.wait_for_function(f"() => ({FIRST_WIDGET_OUTPUT})() !== null", timeout=30_000)
    before = page.evaluate(FIRST_WIDGET_OUTPUT)
    handle = page.locator("[data-first-slider-handle=yes]")
    handle.scroll_into_view_if_needed()
    handle.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"() => ({FIRST_WIDGET_OUTPUT})() !== {json.dumps(before)}", timeout=30_000)
    shots = SCREENSHOTS / "lab"
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / f"{Path(chapter).stem}.png"))
    page.evaluate(SHUT_DOWN)
    page.close()
    assert page_errors == [], f"JavaScript errors in JupyterLab: {page_errors[:3]}"
