# The README's two commands. Both install what they need into .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.rushhour-installed

.PHONY: install drill test bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

drill: $(STAMP)
	$(VENV)/bin/rushhour run scenarios/promo-day.yaml

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) -m reference_server.bench

clean:
	rm -rf $(VENV) results .pytest_cache
