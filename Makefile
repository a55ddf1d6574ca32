# make run    the embedded default pipeline (config.yaml) with Snakemake on 2 cores, then its report
# make test   the test suite (unit, workflow, multi-process)
# make bench  the benchmarks (ratios measured side by side, printed)
# make gpu-bundle, make gpu-check [BUNDLE=dir]   the GPU machine's bundle and check (below)
# Each creates .venv and installs the project first.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU wheel of torch that this project's machines carry; override for a CUDA build (the local
# version, +cu128, is what replaces an installed +cpu build; remove the stamp so that install runs), e.g.
#   rm -f .venv/.dynagnn-installed; make TORCH='torch==2.13.0+cu128 --index-url https://download.pytorch.org/whl/cu128' install
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
	. $(VENV)/bin/activate && python -m pytest -q -n $(TEST_JOBS) --dist loadgroup --durations=25

bench: install
	. $(VENV)/bin/activate && python -m benchmarks

lint: install
	. $(VENV)/bin/activate && snakemake --lint

clean:
	rm -rf results .snakemake

# make gpu-check [BUNDLE=dir]   on a GPU machine: the gpu-marked tests, then the GPU ladder, written to
#   $(GPU_CHECK_OUT) (gpu-check.json, gpu-check.md). With BUNDLE (made by `make gpu-bundle` where the
#   package index is reachable), the machine's own python and torch are used and the bundle's wheels
#   are installed with --no-index into $(GPU_SITE), never over the image's torch; without it, the venv.
GPU_PYTHON ?= python3
GPU_SITE ?= /tmp/dynagnn-gpu-site
GPU_CHECK_OUT ?= results/gpu-check
GPU_CHECK_ARGS ?=
BUNDLE ?=

GPU_BUNDLE ?= .gpu-bundle

.PHONY: gpu-bundle gpu-check
# make gpu-bundle   where the package index is reachable: the wheels a CUDA PyTorch image lacks (cp312,
#   manylinux x86_64, pinned) and the project's own wheel, into $(GPU_BUNDLE); prints its size
gpu-bundle: install
	$(PY) tools/gpu_bundle.py download --dest "$(GPU_BUNDLE)"

ifeq ($(BUNDLE),)
gpu-check: install
	PYTHONUNBUFFERED=1 $(PY) -m benchmarks.gpu_check --out "$(GPU_CHECK_OUT)" $(GPU_CHECK_ARGS)
else
gpu-check:
	$(GPU_PYTHON) tools/gpu_bundle.py install --bundle "$(BUNDLE)" --target "$(GPU_SITE)"
	PYTHONPATH="$(CURDIR)/src:$(CURDIR):$(GPU_SITE)" PYTHONUNBUFFERED=1 \
	  $(GPU_PYTHON) -m benchmarks.gpu_check --out "$(GPU_CHECK_OUT)" $(GPU_CHECK_ARGS)
endif
