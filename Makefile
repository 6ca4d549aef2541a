# Fleetcast: the two commands a new user needs are `make run` and `make test`.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SCENARIO ?= scenarios/launch.yaml

.PHONY: install run test bench lint clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(VENV)/bin/fleetcast run $(SCENARIO)

test: install
	$(VENV)/bin/python -m pytest -q

bench: install
	$(PY) benchmarks/run_all.py

lint: install
	$(VENV)/bin/ruff check simulator tests benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
