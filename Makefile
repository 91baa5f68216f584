# The README's two commands. Both install what they need into .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

# ONNX Runtime is one of two builds that must not share an environment: the CPU build by
# default, the GPU build (CUDA) with RUSHHOUR_GPU=1 or `make install-gpu`. Once installed, the
# GPU build stays (make test, make drill) until RUSHHOUR_GPU=0 asks for the CPU build again.
RUSHHOUR_GPU ?= $(if $(wildcard $(VENV)/.rushhour-installed-gpu),1,)
ifneq ($(filter 1 yes true,$(RUSHHOUR_GPU)),)
ORT_EXTRA := gpu
ORT_OTHER := onnxruntime
STAMP     := $(VENV)/.rushhour-installed-gpu
else
ORT_EXTRA := cpu
ORT_OTHER := onnxruntime-gpu
STAMP     := $(VENV)/.rushhour-installed
endif
TEST_STAMP := $(STAMP)-test
COMMA      := ,

.PHONY: install install-gpu drill test test-deps debian-packages test-fast bench clean redis-server prometheus kserve mitmproxy

INSTALL_LOG := $(VENV)/install.log
UV          := $(VENV)/bin/uv

# Quiet unless it fails: the installers' chatter goes to $(INSTALL_LOG), and a failure prints its
# end and what to do. The packages go in with uv (from the package index, into the environment),
# which resolves and unpacks in parallel: seconds where pip takes most of a minute; pip does it
# if uv cannot. uv compiles no bytecode: Python writes it on first import (see PYRUN).
# Switching builds uninstalls both first: they write the same files, so removing one after the
# other was installed over it would break the survivor.
# $(call PIP_INSTALL,EXTRAS): install the package (editable) with EXTRAS into $(VENV).
define PIP_INSTALL
@{ $(PY) -m pip install --upgrade pip \
	&& { ! $(PY) -m pip show -q $(ORT_OTHER) 2>/dev/null || $(PY) -m pip uninstall -y onnxruntime onnxruntime-gpu; } \
	&& { { $(PY) -m pip install uv && $(UV) pip install --python $(PY) -e '.[$(1)]'; } \
		|| $(PY) -m pip install -e '.[$(1)]'; }; } > $(INSTALL_LOG) 2>&1 || { \
	tail -n 30 $(INSTALL_LOG); \
	echo "rushhour: the install failed; the whole log is $(INSTALL_LOG). It needs Python 3.11+ and the package index."; \
	exit 1; }
endef

# What a user needs (make install, make drill): the package and one ONNX Runtime build.
$(STAMP): pyproject.toml setup.py
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "rushhour: installing into $(VENV) with the $(ORT_EXTRA) build of ONNX Runtime (log: $(INSTALL_LOG)) ..."
	$(call PIP_INSTALL,$(ORT_EXTRA))
	@rm -f $(VENV)/.rushhour-installed $(VENV)/.rushhour-installed-gpu $(VENV)/.rushhour-installed-test $(VENV)/.rushhour-installed-gpu-test
	@touch $(STAMP)

# What the tests need (make test, make test-fast): the package, its ONNX Runtime build and the test
# extra in one install (a second pass would rebuild the editable package for nothing), which is
# the user's install too; and the links mypy and import-linter read the packages through.
$(TEST_STAMP): pyproject.toml setup.py
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "rushhour: installing into $(VENV) with the $(ORT_EXTRA) build of ONNX Runtime and the test tools (log: $(INSTALL_LOG)) ..."
	$(call PIP_INSTALL,$(ORT_EXTRA)$(COMMA)test)
	@rm -f $(VENV)/.rushhour-installed $(VENV)/.rushhour-installed-gpu $(VENV)/.rushhour-installed-test $(VENV)/.rushhour-installed-gpu-test
	@$(PY) -m tests.support.namespace > /dev/null
	@touch $(STAMP) $(TEST_STAMP)

install: $(STAMP)

install-gpu:
	@$(MAKE) --no-print-directory install RUSHHOUR_GPU=1

# The commands below let Python keep the bytecode it compiles (even where PYTHONDONTWRITEBYTECODE is set):
# a drill or a test run starts hundreds of Python processes (servers, nodes, Locust, the CLI), and
# without the cache each one compiles every module it imports again, a few seconds of CPU apiece.
PYRUN := PYTHONDONTWRITEBYTECODE=

drill: $(STAMP)
	$(PYRUN) $(VENV)/bin/rushhour run scenarios/promo-day.yaml

# The L2-cache tests need a real redis-server; install it when missing and we may (root),
# otherwise those tests skip and say why.
REDIS_SERVER = command -v redis-server >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; } || true
redis-server:
	@$(REDIS_SERVER)

# The live-metrics test needs a real Prometheus and promtool: same rule as redis-server.
PROMETHEUS = command -v prometheus >/dev/null && command -v promtool >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq prometheus >/dev/null; } || true
prometheus:
	@$(PROMETHEUS)

# The KServe ModelServer test drills a real KServe server, which cannot share .venv
# (kserve needs pandas<3 and protobuf<7): it gets its own, built once. Without the package index
# the install says so in one line and make goes on; those tests skip and say why.
KSERVE_VENV  := $(VENV)/kserve
KSERVE_STAMP := $(KSERVE_VENV)/.kserve-installed
KSERVE_LOG   := $(VENV)/kserve-install.log

$(KSERVE_STAMP):
	@mkdir -p $(VENV)
	@echo "rushhour: installing kserve into $(KSERVE_VENV) for the KServe tests (log: $(KSERVE_LOG)) ..."
	@{ $(PYTHON) -m venv $(KSERVE_VENV) && $(KSERVE_VENV)/bin/python -m pip install -q uv \
		&& $(KSERVE_VENV)/bin/uv pip install --python $(KSERVE_VENV)/bin/python 'kserve==0.21.0'; } > $(KSERVE_LOG) 2>&1 \
		&& touch $(KSERVE_STAMP) \
		|| { rm -rf $(KSERVE_VENV); echo "rushhour: could not install kserve into $(KSERVE_VENV) (log: $(KSERVE_LOG)); the KServe tests will skip."; }

kserve: $(KSERVE_STAMP)

# The network faults on a user's own service go through mitmproxy (a user-space proxy, where the
# kernel has no netem or iptables), whose pinned libraries cannot share .venv: it gets its own,
# built once, as kserve does. Without the package index the mitmproxy tests skip and say why.
MITMPROXY_VENV  := $(VENV)/mitmproxy
MITMPROXY_STAMP := $(MITMPROXY_VENV)/.mitmproxy-installed
MITMPROXY_LOG   := $(VENV)/mitmproxy-install.log

$(MITMPROXY_STAMP):
	@mkdir -p $(VENV)
	@echo "rushhour: installing mitmproxy into $(MITMPROXY_VENV) for the network-fault tests (log: $(MITMPROXY_LOG)) ..."
	@{ $(PYTHON) -m venv $(MITMPROXY_VENV) && $(MITMPROXY_VENV)/bin/python -m pip install -q uv \
		&& $(MITMPROXY_VENV)/bin/uv pip install --python $(MITMPROXY_VENV)/bin/python 'mitmproxy==11.0.2'; } > $(MITMPROXY_LOG) 2>&1 \
		&& touch $(MITMPROXY_STAMP) \
		|| { rm -rf $(MITMPROXY_VENV); echo "rushhour: could not install mitmproxy into $(MITMPROXY_VENV) (log: $(MITMPROXY_LOG)); the mitmproxy tests will skip."; }

mitmproxy: $(MITMPROXY_STAMP)

# What make test needs, installed side by side: the package into .venv, kserve and mitmproxy into
# environments of their own and the Debian packages do not depend on one another (the Debian packages go one
# after the other, since apt holds a lock).
test-deps:
	@$(MAKE) --no-print-directory -j4 $(TEST_STAMP) debian-packages kserve mitmproxy

debian-packages:
	@$(REDIS_SERVER)
	@$(PROMETHEUS)

# The suite runs in parallel (pytest-xdist): six workers on two cores, since many tests wait
# (servers booting, drills running in real time); four leave the cores partly idle (docs/benchmarks.md,
# "Six workers"). Tests of one xdist_group run on one worker: a module's shared server boots once,
# and the longest drills, capacity searches and timing-sensitive server tests run in three lanes
# ("cpu-a", "cpu-b", "cpu-c"), so no more than three of them share the machine at once. tests/conftest.py hands the lanes out first (hence --no-loadscope-reorder).
# Tests that judge time compare with a reference measured in the same test, so they hold on a
# loaded machine; a failed test still gets up to TEST_RERUNS more tries as a safety net, and every
# rerun is listed in the summary (R) so that a flaky test stays visible.
# PYTEST_ARGS passes more flags, e.g. PYTEST_ARGS="-x --durations=20".
TEST_WORKERS ?= 6
TEST_RERUNS  ?= 2
PYTEST_ARGS  ?=

test: test-deps
	$(PYRUN) $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder -rR \
		--reruns $(TEST_RERUNS) --reruns-delay 5 $(PYTEST_ARGS)

# The edit loop: unit tests (no server booted, no drill), plus the architecture checks (the import
# contracts, ruff and mypy: subprocesses, but the rules every change must keep).
test-fast: $(TEST_STAMP)
	$(PYRUN) $(PY) -m pytest -q -m "not slow or architecture" $(PYTEST_ARGS)

bench: $(STAMP)
	$(PYRUN) $(PY) -m benchmarks.server

clean:
	rm -rf $(VENV) results .pytest_cache
