# The README's two commands. Both install what they need into .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.rushhour-installed

.PHONY: install drill test bench clean redis-server

INSTALL_LOG := $(VENV)/install.log

# Quiet unless it fails: pip's and setuptools' chatter goes to $(INSTALL_LOG), and a failure
# prints its end and what to do.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "rushhour: installing into $(VENV) (log: $(INSTALL_LOG)) ..."
	@{ $(PY) -m pip install --upgrade pip && $(PY) -m pip install -e '.[test]'; } > $(INSTALL_LOG) 2>&1 || { \
		tail -n 30 $(INSTALL_LOG); \
		echo "rushhour: the install failed; the whole log is $(INSTALL_LOG). It needs Python 3.11+ and the package index."; \
		exit 1; }
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
