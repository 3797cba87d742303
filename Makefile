# `make demo` and `make test` are complete on a fresh machine with Python 3.11:
# each creates .venv here if missing and installs the project into it first.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(PY):
	$(shell command -v $(PYTHON) || command -v python3) -m venv $(VENV)

$(STAMP): $(PY) setup.cfg pyproject.toml
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/dataflow_paper.py --out figures

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) benchmarks/local_vs_beam.py

clean:
	rm -rf $(VENV) figures .pytest_cache .hypothesis
