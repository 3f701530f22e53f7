# Two commands do all the set-up on a fresh machine with Python 3.11 and pip:
#   make demo   - run the main job (the command-line demo)
#   make test   - run the whole test suite (it writes only to temporary folders; it
#                 builds the documentation site too)
# and, when the pictures should change, make screenshots refreshes docs/figures/ (from the
# demo) and docs/screenshots/ (from JupyterLab and the app in Chromium).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: demo test lint docs figures screenshots bench clean

$(STAMP): pyproject.toml
	@echo "installing TensorFlow and the notebook stack into $(VENV) (a few minutes the first time)"
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[test,notebook,docs]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/dtsgd-viz demo

# both cores, each test file in one worker (a notebook's cells run in order in one kernel)
test: $(STAMP) lint
	$(VENV)/bin/python -m pytest -n 2 --dist loadfile

# ruff (lint and format, pyproject's [tool.ruff]) and basedpyright in basic mode
# ([tool.basedpyright]): make test fails on any of them (about 40 s)
lint: $(STAMP)
	$(VENV)/bin/ruff check --no-cache .
	$(VENV)/bin/ruff format --check --no-cache .
	$(VENV)/bin/basedpyright

# the documentation site, into site/ (warnings are errors; about 15 s)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# docs/figures/: the demo's layout, shard, path, update close-up and animation pictures, drawn by the current
# code (about a minute)
FIGURES := layout.png shards-nesterov-update010.png paths.png update.png paths.gif
figures: $(STAMP)
	rm -rf .figures-out
	$(VENV)/bin/dtsgd-viz demo --out .figures-out > /dev/null
	rm -f docs/figures/*
	cd .figures-out && cp $(FIGURES) ../docs/figures/
	rm -rf .figures-out

# the browser tests that take the README's screenshots, copying them into docs/screenshots/
# once they pass (needs /usr/bin/chromium, as `.ci/run` installs; about a minute)
screenshots: figures
	@test -x /usr/bin/chromium || { echo "make screenshots needs /usr/bin/chromium (apt-get install chromium)" >&2; exit 1; }
	DTSGD_VIZ_SCREENSHOTS=docs/screenshots $(VENV)/bin/python -m pytest \
		tests/project/test_browser.py::test_notebook_03_in_jupyterlab tests/project/test_browser.py::test_app_in_voila

$(BENCH_STAMP): $(STAMP)
	$(VENV)/bin/python -m pip install --quiet -e ".[bench]"   # TensorBoard, for its peer row
	touch $(BENCH_STAMP)

# what recording costs (about 15 minutes on a quiet 2-core machine; prints markdown tables
# of ratios, each row with its recorder settings and, where it has one, its floor measured
# in the same run): docs/benchmarks.md's tables and the README's figures come from it.
# compile_time.py: the first call of a 10- and a 40-layer step, each variant in a fresh
# process (2 repeats and 1 here; python benchmarks/compile_time.py for its own defaults)
bench: $(BENCH_STAMP)
	$(VENV)/bin/python benchmarks/overhead.py
	$(VENV)/bin/python benchmarks/keep_every_step.py
	$(VENV)/bin/python benchmarks/stats_kernels.py
	$(VENV)/bin/python benchmarks/compile_time.py --layers 10 40 --repeats 2 1
	$(VENV)/bin/python benchmarks/shard_views.py
	test ! -f benchmarks/floors.py || $(VENV)/bin/python benchmarks/floors.py
	$(VENV)/bin/python benchmarks/long_paths.py
	$(VENV)/bin/python benchmarks/iterator_end.py
	$(VENV)/bin/python benchmarks/import_ml_dtypes.py
	$(VENV)/bin/python benchmarks/web_redraw.py

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache site
