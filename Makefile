# The README's two commands. Both install what they need into .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.rushhour-installed

.PHONY: install drill test bench clean redis-server

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

drill: $(STAMP)
	$(VENV)/bin/rushhour run scenarios/promo-day.yaml

# The L2-cache tests need a real redis-server; install it when missing and we may (root),
# otherwise those tests skip and say why.
redis-server:
	@command -v redis-server >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; } || true

test: $(STAMP) redis-server
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) -m benchmarks.server

clean:
	rm -rf $(VENV) results .pytest_cache
