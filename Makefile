# Two commands do all the set-up on a fresh machine with Python 3.11 and pip:
#   make demo   - run the main job (the command-line demo)
#   make test   - run the whole test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[test,notebook]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/dtsgd-viz demo

test: $(STAMP)
	$(VENV)/bin/python -m pytest

# what recording costs (about 1.5 minutes; prints markdown tables of ratios)
bench: $(STAMP)
	$(VENV)/bin/python benchmarks/overhead.py

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
