"""Every `RUSHHOUR_*` environment variable, declared once: its name, who sets it, who reads it, and
what it means. docs/reference/environment.md is this table (tests/kernel/test_environment.py keeps
the page and the code in step, and refuses a `RUSHHOUR_*` name anywhere in the project, code, tests,
manifests, Makefile or docs, without a row here).

Three kinds: a **setting** is for people (a token, a cache folder, a lease length); a **hand-off**
is how one rushhour process tells a child it started something (the drill's URL to an experiment,
the load settings to a Locust process), listed so that nobody is surprised by it, not to be set by
hand; a **development** variable is for people working on rushhour itself (the test suite).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["VARIABLES", "Variable", "markdown_table", "page"]


@dataclass(frozen=True, kw_only=True)
class Variable:
    name: str
    kind: Literal["setting", "hand-off", "development"]
    read_by: str
    meaning: str


VARIABLES: tuple[Variable, ...] = (
    Variable(name="RUSHHOUR_ADMIN_TOKEN", kind="setting", read_by="reference server gateway; chaos experiments",
             meaning="Bearer token of the reference server's /admin API. A drill makes one per run and hands it to "
                     "its server and its experiments; set it to reach a server you started yourself."),
    Variable(name="RUSHHOUR_CLUSTER_SECRET", kind="setting", read_by="`rushhour run --workers`, `rushhour worker`",
             meaning="Shared secret that authenticates workers and master to each other (or `--secret-file`)."),
    Variable(name="RUSHHOUR_STATE_DIR", kind="setting", read_by="reference server; calibration and overhead caches",
             meaning="Where rushhour keeps what it learns about this machine (calibrations, overhead figures). "
                     "Default `~/.rushhour`."),
    Variable(name="RUSHHOUR_MODEL_CACHE", kind="setting", read_by="reference server nodes",
             meaning="Where the bundled ONNX models are built and kept. Default `~/.cache/rushhour/models`."),
    Variable(name="RUSHHOUR_REDIS_URL", kind="setting", read_by="reference server gateway",
             meaning="URL of the shared L2 cache, over `cache.redis_url` in the server's config file."),
    Variable(name="RUSHHOUR_REQUIRE_PROVIDER", kind="setting", read_by="reference server nodes",
             meaning="An ONNX Runtime execution provider a node must get (e.g. `CUDAExecutionProvider`); the node "
                     "refuses to start on another instead of falling back silently."),
    Variable(name="RUSHHOUR_LEASE_S", kind="setting", read_by="chaos experiments' fault leases",
             meaning="Length of a held fault's lease, renewed while its holder lives (default 20 s)."),
    Variable(name="RUSHHOUR_LEASE_MARGIN_S", kind="setting", read_by="chaos experiments' fault leases",
             meaning="How long after a hold the renewals go on (default 30 s)."),
    Variable(name="RUSHHOUR_LEASE_DIR", kind="setting", read_by="chaos experiments' fault leases",
             meaning="Folder of the local lease files that the lease keeper watches; it must be this user's, "
                     "mode 0700 (default `$XDG_RUNTIME_DIR/rushhour-leases`, else `/tmp/rushhour-leases-<uid>`)."),
    Variable(name="RUSHHOUR_NODE_TOKEN", kind="setting", read_by="reference server gateway and nodes",
             meaning="Token the gateway stamps on every call to its nodes; a node takes the slowdown fault only "
                     "from calls that carry it. A gateway makes one for the nodes it starts; remote nodes "
                     "(Kubernetes) share it with their gateway through a Secret."),
    Variable(name="RUSHHOUR_AUDIT_WAIT_S", kind="setting", read_by="the drill's leak audit",
             meaning="How long the leak audit lets a rollback settle (a node restarting) before it judges."),
    Variable(name="RUSHHOUR_NO_OVERHEAD_CHECK", kind="setting", read_by="`rushhour run`",
             meaning="Set (to anything) to skip the harness-overhead check in every `rushhour run`, as "
                     "`--no-overhead-check` does."),
    Variable(name="RUSHHOUR_CONCURRENCY", kind="setting", read_by="the Locust process",
             meaning="Most requests one load process keeps in flight (default 2000)."),
    Variable(name="RUSHHOUR_K8S_NAMESPACE", kind="setting", read_by="the Kubernetes workload experiments",
             meaning="Namespace of the workload a `experiments/kubernetes/workload-*.json` fault acts on (a chaos "
                     "entry's `env`)."),
    Variable(name="RUSHHOUR_K8S_SELECTOR", kind="setting", read_by="the Kubernetes workload experiments",
             meaning="Label selector of the pods, Deployment or nodes that fault acts on (e.g. `app=my-service`)."),
    Variable(name="RUSHHOUR_K8S_MIN_READY", kind="setting", read_by="the Kubernetes workload experiments",
             meaning="Ready pods the workload must have before and after the fault (its steady state; default 1)."),
    Variable(name="RUSHHOUR_NAMESPACE", kind="setting", read_by="the bundled `k8s-*` experiments",
             meaning="Namespace of the reference server's deployment on Kubernetes (default `rushhour`)."),
    Variable(name="RUSHHOUR_SLO_P99_MS", kind="setting", read_by="the bundled experiments' steady-state probe",
             meaning="P99 latency, in ms, the drill's own requests must hold for the steady state to pass "
                     "(default 1500)."),
    Variable(name="RUSHHOUR_SLO_MAX_ERROR_RATE", kind="setting", read_by="the bundled experiments' steady-state probe",
             meaning="Largest share of failed requests for the steady state to pass (default 0.01)."),
    Variable(name="RUSHHOUR_SLO_WINDOW_S", kind="setting", read_by="the bundled experiments' steady-state probe",
             meaning="Seconds of the drill's latest requests the probe judges (default 5)."),
    Variable(name="RUSHHOUR_REDIS_PORT", kind="setting", read_by="`experiments/redis-down.json`",
             meaning="Port of the Redis the L2-cache fault stops (default 6379)."),
    Variable(name="RUSHHOUR_SLOWDOWN_FACTOR", kind="setting", read_by="`experiments/gpu-throttle.json`",
             meaning="How many times slower the throttled node computes (default 1.5)."),
    Variable(name="RUSHHOUR_GPU", kind="setting", read_by="the Makefile (`make install`, `make test`, `make drill`)",
             meaning="`1` installs the GPU build of ONNX Runtime (CUDA) and keeps it; `0` asks for the CPU build "
                     "again. Default: the build already installed, else the CPU one."),
    Variable(name="RUSHHOUR_REDIS_PASSWORD", kind="setting",
             read_by="the gateway Deployment (`reference_server/k8s/gateway.yaml`)",
             meaning="Password of the bundled Redis, from the `rushhour-redis` Secret; the manifest builds "
                     "`RUSHHOUR_REDIS_URL` from it."),
    Variable(name="RUSHHOUR_WHEEL", kind="setting", read_by="the example CI files (`ci/own-service.*.yml`)",
             meaning="The rushhour wheel the gate installs (none is published: `pip wheel --no-deps -w dist .` "
                     "builds one)."),
    Variable(name="RUSHHOUR_URL", kind="hand-off", read_by="chaos experiments",
             meaning="The drill's guarded target URL, given to each experiment it runs."),
    Variable(name="RUSHHOUR_FAULT_HOLD_S", kind="hand-off", read_by="chaos experiments",
             meaning="How long the scenario holds this fault, in wall seconds."),
    Variable(name="RUSHHOUR_LIVE", kind="hand-off", read_by="chaos experiments' probes",
             meaning="The drill's live results folder, so a probe can read the drill's own latencies."),
    Variable(name="RUSHHOUR_DRILL_PID", kind="hand-off", read_by="the chaos subprocess",
             meaning="The drill's PID: the chaos process rolls back and exits when the drill is gone."),
    Variable(name="RUSHHOUR_LOAD_SETTINGS", kind="hand-off", read_by="the Locust process",
             meaning="The load settings (JSON) a Locust process fires by."),
    Variable(name="RUSHHOUR_DISTRIBUTED", kind="hand-off", read_by="the Locust process",
             meaning="Marks a Locust process that is one of several (master and workers)."),
    Variable(name="RUSHHOUR_REMOTE_WORK", kind="hand-off", read_by="a worker's Locust process",
             meaning="Folder where a worker on another host keeps its share and part files."),
    Variable(name="RUSHHOUR_WORKER_NAME", kind="hand-off", read_by="a worker's Locust process",
             meaning="The worker's name in the master's results."),
    Variable(name="RUSHHOUR_WORKER_LOCAL", kind="hand-off", read_by="a worker's Locust process",
             meaning="What the worker decided for itself (target credentials, allowed targets), never from the "
                     "master."),
    Variable(name="RUSHHOUR_PINNED_HOSTS", kind="hand-off", read_by="the Locust process, a chaos run",
             meaning="The addresses the loopback guard checked for each target host name (JSON); the load "
                     "and the chaos extension's admin client connect there only, whatever the name resolves "
                     "to later."),
    Variable(name="RUSHHOUR_KSERVE_PYTHON", kind="development", read_by="the KServe model-server tests",
             meaning="A Python with `kserve` installed (`kserve[llm]` for the chat tests), in which the tests "
                     "start a real KServe model server (default `.venv/kserve/bin/python`, which `make test` builds)."),
    Variable(name="RUSHHOUR_SUITE_PROFILE", kind="development",
             read_by="the suite's profile plugin (`-p tests.support.suite_profile`)",
             meaning="Folder where each test worker writes one JSON line per test (wall time, CPU); "
                     "`python -m benchmarks.suite_profile DIR` sums them."),
)


def markdown_table() -> str:
    """The reference page's table, settings first, each kind in the order declared."""
    rows = ["| variable | kind | read by | meaning |", "| --- | --- | --- | --- |"]
    for kind in ("setting", "hand-off", "development"):
        rows += [f"| `{v.name}` | {v.kind} | {v.read_by} | {v.meaning} |" for v in VARIABLES if v.kind == kind]
    return "\n".join(rows) + "\n"


def page() -> str:
    """docs/reference/environment.md, whole (`python -m rushhour.kernel.environment` prints it)."""
    return ("# Environment variables\n\n"
            "Every variable rushhour reads. A **setting** is yours to set; a **hand-off** is how one rushhour "
            "process tells a child it started what to do, listed so that nothing in a process's environment is "
            "a surprise; a **development** variable is for working on rushhour itself. Command-line flags and "
            "scenario fields win over a setting where both exist.\n\n"
            + markdown_table())


if __name__ == "__main__":
    print(page(), end="")
