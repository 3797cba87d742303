# `make demo` and `make test` are complete on a fresh machine with Python 3.11 (and Java 17 for
# the Spark runner's tests): each creates
# .venv here if missing and installs the project into it first. `make bench` also installs
# apache-beam, which only the benchmark uses.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test bench clean

$(PY):
	$(shell command -v $(PYTHON) || command -v python3) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed-test: $(PY) setup.cfg pyproject.toml
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed-test
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(VENV)/.installed-test
	$(PY) examples/dataflow_paper.py --out figures
	$(PY) examples/dataflow_paper.py --runner=spark --no-draw

test: $(VENV)/.installed-test
	$(PY) -m pytest

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/local_vs_beam.py

clean:
	rm -rf $(VENV) figures .pytest_cache .hypothesis
