# Two commands are the contract (see README.md):
#   make book   set up .venv from requirements.txt, vendor the site's browser assets, and build the
#               site into _build/html, executing every chapter
#   make test   gtlib's unit tests, nbval over every notebook, the site build with warnings as
#               errors, and the checks of the built site (browser, links, workflows)
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
JOBS ?= 2

# One torch thread per process: on a small shared machine more threads are much slower.
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
export GTLIB_THREADS := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: all setup vendor book student test unit nbval site-check bench clean

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
	touch $@

setup: $(VENV)/.installed book/_vendor/.vendored

vendor: book/_vendor/.vendored

book: setup
	$(BIN)/jupyter-book build . --all -W -n --keep-going

# The student edition: the same site without the exercises' solutions.
student: setup
	sed 's/^    hide_solutions: false/    hide_solutions: true/' _config.yml > _config_student.yml
	grep -q 'hide_solutions: true' _config_student.yml
	$(BIN)/jupyter-book build . --all -W -n --keep-going \
	  --path-output _build/student --config _config_student.yml

unit: setup
	$(BIN)/python -m pytest -q -n $(JOBS) --ignore=tests/site tests

# Every notebook under nbval, one process per worker (cells of one notebook stay on one worker).
nbval: setup
	$(BIN)/python -m pytest -q -n $(JOBS) --dist loadfile --nbval-lax -p no:cacheprovider book

site-check: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/site

test: unit nbval book site-check

bench: setup
	$(BIN)/python tests/bench_ensemble.py

clean:
	rm -rf _build book/_vendor/mathjax book/_vendor/widgets book/_vendor/.vendored
