# Fleetcast: the two commands a new user needs are `make run` and `make test`.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SCENARIO ?= scenarios/launch.yaml

SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install browser run test bench lint docs clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m simulator.runs.warm $(SCENARIO)
	touch $(STAMP)

install: $(STAMP)

run: install
	$(VENV)/bin/fleetcast run $(SCENARIO)

# Headless Chromium for the report test (Debian's package), installed when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { echo "installing Debian's chromium for the report test"; \
	    $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; } || \
	  echo "warning: could not install chromium; the browser tests will be skipped (failed on CI)"

test: install browser
	$(VENV)/bin/python -m pytest -q -n auto --dist worksteal

bench: install
	$(PY) benchmarks/run_all.py

lint: install
	$(VENV)/bin/ruff check simulator tests benchmarks

# The documentation site (MkDocs + Material), with the references generated from the code.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build *.egg-info site
