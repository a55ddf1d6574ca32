# make run    the embedded default pipeline (config.yaml) with Snakemake on 2 cores, then its report
# make test   the test suite (unit, workflow, multi-process)
# make bench  the benchmarks (ratios measured side by side, printed)
# Each creates .venv and installs the project first.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU wheel of torch that this project's machines carry; override for a CUDA build, e.g.
#   make TORCH='torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128' run
TORCH ?= torch==2.13.0
CORES ?= 2
# test processes of `make test` (pytest-xdist): auto, one per core
TEST_JOBS ?= auto
STAMP := $(VENV)/.dynagnn-installed

.PHONY: install run test bench lint clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -e '.[test,workflow]'
	touch $(STAMP)

install: $(STAMP)

run: install
	. $(VENV)/bin/activate && snakemake --cores $(CORES) --printshellcmds && \
	  snakemake --cores $(CORES) --report results/report.html && \
	  echo "dynagnn: report results/report.html, claims table results/report/claims.html"

test: install
	. $(VENV)/bin/activate && python -m pytest -q -n $(TEST_JOBS) --dist worksteal

bench: install
	. $(VENV)/bin/activate && python -m benchmarks

lint: install
	. $(VENV)/bin/activate && snakemake --lint

clean:
	rm -rf results .snakemake
