# `make demo` and `make test` are complete on a fresh machine with Python 3.11 (and Java 17 for
# the Spark runner's tests): each creates
# .venv here if missing and installs the project into it first; `make test` also builds
# .venv-worker, the test cluster's worker Python (pyarrow, pandas, numpy and no pomset), and
# unpacks Beam's own examples and tests from the pinned apache-beam wheel into .beam-src
# (tests/test_beam_*.py run them on pomset; pip fetches the wheel, nothing installs it).
# `make bench` runs the benchmark set (benchmarks/run_all.py) and rewrites the tables in BENCHMARKS.md
# and docs/performance.md and the plots in docs/img; `make bench-quick` runs it at small sizes in
# under ten minutes and prints only; both install apache-beam, DuckDB and Polars, the peers
# only the benchmarks use. `make docs` builds the
# documentation site into site/ (mkdocs, the API reference from the docstrings); `make test`
# installs the docs tools too, since a test builds the site.
PYTHON ?= python3.11
VENV := .venv
WORKER_VENV := .venv-worker
BEAM_SRC := .beam-src
PY := $(VENV)/bin/python

.PHONY: demo test docs bench bench-quick clean

$(PY):
	$(shell command -v $(PYTHON) || command -v python3) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed-test: $(PY) setup.cfg pyproject.toml
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

$(WORKER_VENV)/.installed: $(VENV)/.installed-test tests/worker_venv.py
	$(PY) tests/worker_venv.py $(WORKER_VENV)

$(BEAM_SRC)/SHA256: $(PY) tests/beam_src.py
	$(PY) tests/beam_src.py $(BEAM_SRC)
	touch $@

$(VENV)/.installed-docs: $(PY) setup.cfg pyproject.toml
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed-test
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(VENV)/.installed-test
	$(PY) examples/dataflow_paper.py --out figures
	$(PY) examples/dataflow_paper.py --runner=spark --no-draw

# two workers, a test file each at a time: most of the suite waits on JVMs and micro-batch
# triggers, not on the CPU, and module fixtures (the standalone cluster) start once per file
test: $(VENV)/.installed-test $(VENV)/.installed-docs $(WORKER_VENV)/.installed \
		$(BEAM_SRC)/SHA256
	$(PY) -m pytest -n 2 --dist loadfile

docs: $(VENV)/.installed-docs
	$(PY) -m mkdocs build --strict

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/run_all.py

bench-quick: $(VENV)/.installed-dev
	$(PY) benchmarks/run_all.py --quick

clean:
	rm -rf $(VENV) $(WORKER_VENV) $(BEAM_SRC) figures site .pytest_cache .hypothesis
