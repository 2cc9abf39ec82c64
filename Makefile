# Attention, from Scratch: two commands do all the set-up on a fresh machine.
#   make book   builds the HTML book into _build/html
#   make test   runs the whole suite (unit tests, nbval on every chapter, browser tests)

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
VENV_STAMP := $(VENV)/.installed
WIDGETS_JS := _vendor/html-manager/embed.js
BOOK_INDEX := _build/html/index.html
# The whole book as one PDF (`make pdf`), and its copy in the HTML book (the intro links it).
PDF := _build/pdf/attention-from-scratch.pdf
HTML_PDF := _build/html/attention-from-scratch.pdf
# Without Debian's Chromium (a laptop) `make book` and `make test` leave the PDF out (its test skips).
BOOK_PDF := $(if $(wildcard /usr/bin/chromium),$(HTML_PDF))
BOOK_SOURCES := _config.yml _toc.yml $(shell find book -name '*.ipynb' -o -name '*.md' 2>/dev/null | grep -v ipynb_checkpoints)
NOTEBOOKS := $(sort $(wildcard book/*.ipynb))

.PHONY: book test test-portable lab lint notebooks bench clean setup pdf

book: $(VENV_STAMP) $(WIDGETS_JS) $(BOOK_PDF)
	$(BIN)/jupyter-book build -W -n --keep-going .
	@echo "The book: $(CURDIR)/$(BOOK_INDEX)"

# In parallel, one worker per core (at most 8), each on one thread; a file stays
# on one worker (a chapter's cells share a kernel), the longest files first
# (tests/conftest.py). TEST_WORKERS=0 runs everything in this process.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$((n > 8 ? 8 : n)))
test: $(VENV_STAMP) $(BOOK_INDEX) $(BOOK_PDF) lint
	OMP_NUM_THREADS=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile \
	  --no-loadscope-reorder --durations=12 --junitxml=_build/pytest.xml

# The package, the tests and the chapters' code cells: formatted by ruff at 79 columns
# (pyproject.toml), and clean under its checks.
lint: $(VENV_STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

# The stored outputs and the unit tests again, under other numeric set-ups than the one the
# chapters were recorded in: ATen's lower SIMD levels, MKL limited to SSE4.2 / AVX2, 1 and 2
# threads (tests/tools/portability.py). Every printed number must hold on every reader's CPU.
test-portable: $(VENV_STAMP)
	$(PY) tests/tools/portability.py

setup: $(VENV_STAMP) $(WIDGETS_JS)

# The virtual environment: made if missing, refreshed when the pins change.
$(VENV_STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

# The ipywidgets HTML manager, served by the book itself (no CDN).
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	touch $@

$(WIDGETS_JS): node_modules/.installed
	rm -rf _vendor/html-manager
	mkdir -p _vendor/html-manager
	cp node_modules/@jupyter-widgets/html-manager/dist/* _vendor/html-manager/
	rm -f _vendor/html-manager/*.map
	touch $@

$(BOOK_INDEX): $(VENV_STAMP) $(WIDGETS_JS) $(BOOK_SOURCES)
	$(BIN)/jupyter-book build -W -n --keep-going .

# Jupyter Book's single-page HTML, printed by Debian's Chromium (tests/tools/print_pdf.py).
pdf: $(PDF)

$(PDF): $(VENV_STAMP) $(WIDGETS_JS) $(BOOK_SOURCES) tests/tools/print_pdf.py tests/tools/print.css
	$(PY) tests/tools/print_pdf.py --out $@

$(HTML_PDF): $(PDF)
	mkdir -p $(@D)
	cp $(PDF) $@

# JupyterLab on the chapters as lab/jupyter_lab_config.py sets it up: MyST rendered by
# jupyterlab-myst and the book's references by lab/labextensions, a file browser of chapters and
# back matter only, no news pop-up. `jupyter trust` marks the chapters trusted (in the user's
# Jupyter data folder; the notebooks are not changed), so their saved explorers show before a run.
lab: $(VENV_STAMP)
	$(BIN)/jupyter trust $(NOTEBOOKS)
	$(BIN)/jupyter lab --notebook-dir=book --config=lab/jupyter_lab_config.py

# Re-execute every chapter in place: how an author refreshes the stored outputs
# (and saved widget state) that nbval then re-checks. ATTNBOOK_EXPLORER_FRAMES=1 builds each
# explorer from frames drawn in advance, so that it moves in the HTML book without Python.
notebooks: $(VENV_STAMP)
	ATTNBOOK_EXPLORER_FRAMES=1 $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	  --ExecutePreprocessor.timeout=900 --ExecutePreprocessor.kernel_name=python3 $(NOTEBOOKS)

# Benchmarks (not part of `make test`): prints a table, writes _build/bench.json.
bench: $(VENV_STAMP) $(WIDGETS_JS)
	$(PY) tests/benchmarks/run.py --json _build/bench.json

clean:
	rm -rf _build _vendor node_modules $(VENV) .pytest_cache .hypothesis
	find . -name __pycache__ -prune -exec rm -rf {} +
