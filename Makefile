# Two commands are the contract (see README.md):
#   make book   set up .venv from requirements.txt, vendor the site's browser assets, execute every
#               chapter once under nbval (JOBS at a time) and build the site from those executions
#               into _build/html
#   make test   the static checks (`make lint`), gtlib's unit tests, `make book` with warnings as errors, the claims gate (fails on a
#               claim that did not hold), the checks of the built site (browser, links, workflows,
#               student edition), and every notebook once more at a seed derived from the commit
#   make sweep  every chapter at seeds 0-9 (JOBS at a time), recorded in book/_data/sweep
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
JOBS ?= 2
# The jupyter-cache the executions go to and the site build reads (book/_tools/nbval_record.py).
CACHE := $(CURDIR)/_build/.jupyter_cache

# One torch thread per process: on a small shared machine more threads are much slower.
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
export GTLIB_THREADS := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1
# glibc returns freed heap to the system after every training step and faults it back in at the
# next one (measured on the contrastive chapter: 23 s of system time, 1 s with these settings);
# keeping up to 256 MB of free heap per process removes that churn.
export MALLOC_TRIM_THRESHOLD_ := 268435456
export MALLOC_MMAP_THRESHOLD_ := 268435456
export MALLOC_TOP_PAD_ := 67108864

.PHONY: all setup vendor execute book student test lint unit nbval site-check bench clean \
	claims-gate fresh-seed sweep pdf slides

all: book

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

# MathJax 3 and the ipywidgets HTML manager come from the npm registry (package-lock.json) and are
# copied into book/_vendor, which Sphinx serves as static files: the site loads nothing from a CDN.
book/_vendor/.vendored: package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	mkdir -p book/_vendor/mathjax book/_vendor/widgets
	cp -r node_modules/mathjax/es5/. book/_vendor/mathjax/
	rm -rf book/_vendor/mathjax/sre book/_vendor/mathjax/*-speech.js
	cp -r node_modules/@jupyter-widgets/html-manager/dist/. book/_vendor/widgets/
	cp node_modules/requirejs/require.js book/_vendor/widgets/require.js
	mkdir -p tests/site/vendor  # axe-core: injected by the site's accessibility test only
	cp node_modules/axe-core/axe.min.js tests/site/vendor/axe.min.js
	touch $@

setup: $(VENV)/.installed book/_vendor/.vendored

vendor: book/_vendor/.vendored

# Every notebook once, under nbval, JOBS at a time (cells of one notebook stay on one worker). This
# empties _build/results (the claims the reproduction report shows) and records each executed
# notebook into $(CACHE). `make book student` executes once for both editions.
execute: setup
	PYTHONPATH=$(CURDIR)/book/_tools$${PYTHONPATH:+:$$PYTHONPATH} \
	  $(BIN)/python -m pytest -q -n $(JOBS) --dist loadfile --nbval-lax -p no:cacheprovider \
	  -p nbval_record --nbval-record=$(CACHE) book

# The site, built from this run's executions (nothing is executed twice; a notebook that is not in
# the cache would be executed by the build itself).
book: execute
	$(BIN)/python book/_tools/build_config.py --cache $(CACHE) --output _config_build.yml
	$(BIN)/jupyter-book build . --all -W -n --keep-going --config _config_build.yml

# The student edition: the same site without the exercises' solutions, into
# _build/student/_build/html; its notebooks (download and launch buttons) have no solutions.
student: execute
	$(BIN)/python book/_tools/build_config.py --cache $(CACHE) --student --output _config_student.yml
	$(BIN)/jupyter-book build . --all -W -n --keep-going \
	  --path-output _build/student --config _config_student.yml

# The static checks, seconds: gtlib's layering (the import-linter contracts in pyproject.toml: the
# core imports no chapter module, chapters do not import each other, no import cycles) and ruff
# (its lint rules, and its formatter's layout: `ruff format gtlib tests book/_tools book/_ext`).
# PYTHONPATH: the contracts are checked on this checkout's gtlib, whatever the venv has installed.
lint: setup
	PYTHONPATH=$(CURDIR) $(BIN)/lint-imports
	$(BIN)/ruff check --no-cache gtlib tests book/_tools book/_ext
	$(BIN)/ruff format --check --no-cache gtlib tests book/_tools book/_ext

# gtlib's tests (tests/core, tests/chapters: one module each, mirroring gtlib/) and the notebook,
# build and packaging tests (tests/book); `pytest tests/chapters/soft/test_gp.py` runs one module's.
unit: setup
	$(BIN)/python -m pytest -q -n $(JOBS) --ignore=tests/site tests

# Every notebook under nbval, JOBS at a time, without building anything (what the GPU and Colab-path
# workflows run; `make book` and `make test` execute the notebooks this way too, once).
nbval: setup
	$(BIN)/python -m pytest -q -n $(JOBS) --dist loadfile --nbval-lax -p no:cacheprovider book

site-check: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/site

# The strict half of the claims: `make book` records a claim that does not hold and builds the site
# all the same; here it fails the run (book/_tools/claims_gate.py says which claims are exempt).
claims-gate: setup
	$(BIN)/python book/_tools/claims_gate.py _build/results

# Every notebook once more, at a seed derived from the commit (a seed nobody tuned to), without
# building: a claim the sweep records as holding at every seed must hold here too.
FRESH_SEED ?= $(shell git rev-parse HEAD 2>/dev/null | cut -c1-8 | xargs -I{} printf '%d' 0x{} \
	| awk '{print 1000 + $$1 % 90000}' || echo 4242)
fresh-seed: setup
	rm -rf _build/fresh-results
	@echo "fresh-seed run at GTLIB_SEED=$(FRESH_SEED)"
	GTLIB_SEED=$(FRESH_SEED) GTLIB_RESULTS_DIR=$(CURDIR)/_build/fresh-results \
	  $(BIN)/python -m pytest -q -n $(JOBS) --dist loadfile --nbval-lax -p no:cacheprovider book
	$(BIN)/python book/_tools/claims_gate.py _build/fresh-results --fresh

# Seeds 0-9 of every chapter (or CHAPTERS=slug,slug), JOBS processes at a time, one thread each.
SEEDS ?= 0-9
CHAPTERS ?=
sweep: setup
	$(BIN)/python book/_tools/sweep.py --seeds $(SEEDS) --jobs $(JOBS) --chapters "$(CHAPTERS)"

# PDF handouts of the built site (each chapter and the whole book) into _build/pdf, printed by the
# local Chromium; nothing is downloaded. The site checks print them too (tests/site/test_pdf.py).
pdf: setup
	test -f _build/html/index.html || $(MAKE) book
	$(BIN)/python book/_tools/pdf.py --site _build/html --out _build/pdf

# A reveal.js lecture deck per chapter into _build/slides, made from the last build's executed
# chapters and claims (reveal.js from npm, MathJax vendored): open _build/slides/<chapter>.html.
slides: setup
	test -f _build/html/index.html || $(MAKE) book
	$(BIN)/python book/_tools/slides.py --build _build --out _build/slides

test: lint unit book claims-gate site-check fresh-seed

# The engine against its peers and the GEMM peak, one process, one thread (about 2-3 minutes of CPU).
bench: setup
	PYTHONPATH=$(CURDIR) $(BIN)/python book/_tools/bench_ensemble.py

clean:
	rm -rf _build book/_vendor/mathjax book/_vendor/widgets book/_vendor/.vendored
	rm -f _config_build.yml _config_student.yml
