# The two commands of the README: `make run` and `make test`. Each builds its own virtualenv on first use.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint format bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The CPU build of PyTorch 2.13.0 for the in-job SDK's tests (a plain `torch` would pull a multi-GB CUDA build).
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[test,sdk]'
	touch $(STAMP)

run: $(STAMP)  ## the portal on the embedded default with demo data: http://127.0.0.1:$${AIPOOL_PORT:-8000}/
	$(BIN)/python manage.py up

test: $(STAMP)  ## the whole test suite (SQLite unless DATABASE_URL is set)
	AIPOOL_DATA_DIR=$${AIPOOL_DATA_DIR:-var/test} $(BIN)/pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python -m bench all

clean:
	rm -rf $(VENV) var
