"""Which ONNX Runtime execution provider, precision and data path a tier runs with, and the
`require_provider: cuda` check that refuses to run a GPU tier anywhere else.

Placement: INT8 tiers (`fast`) run on the CPU, where ONNX Runtime's dynamic-quantization kernels
live; the others (`quality`) run on CUDA in fp16 with IO binding when this onnxruntime offers
CUDA, else on the CPU in fp32. `plan_session` is a pure function of the tier and the providers
offered, so the CUDA choice is tested on a CPU-only machine by passing the list a GPU build offers.

ONNX Runtime falls back to the CPU quietly when the CUDA provider cannot load (no GPU, driver or
CUDA libraries); `check_in_use` compares what a session really uses with the requirement.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Literal

__all__ = [
    "CPU",
    "CUDA",
    "REQUIREMENTS",
    "REQUIRE_ENV",
    "ProviderRequirementError",
    "SessionPlan",
    "check_in_use",
    "installed_runtimes",
    "parse_requirement",
    "plan_session",
    "preflight",
    "preload_cuda_libraries",
    "probe",
    "runs_on_gpu",
    "warmup_batch_sizes",
    "warmup_text_lengths",
]

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"
REQUIREMENTS: dict[str, str] = {"cuda": CUDA}
REQUIRE_ENV = "RUSHHOUR_REQUIRE_PROVIDER"
RUNTIME_DISTRIBUTIONS = ("onnxruntime", "onnxruntime-gpu", "onnxruntime-directml", "onnxruntime-openvino", "onnxruntime-qnn")
PREFLIGHT_TIMEOUT_S = 180.0
_PROBE_SCRIPT = "import json; from rushhour.reference_server.model.providers import probe; print(json.dumps(probe()))"
INSTALL_HINT = ("install the GPU build (`make install-gpu`, or `pip install -e '.[gpu]'` in an environment without the "
                "`onnxruntime` CPU package) on a machine with an NVIDIA GPU and driver")

Precision = Literal["fp32", "fp16", "int8"]


class ProviderRequirementError(RuntimeError):
    """A tier would not run on the execution provider that `require_provider` demands."""


@dataclass(frozen=True, kw_only=True)
class SessionPlan:
    """How to open a tier's sessions: providers in order, their options, the graphs' precision,
    and whether decode state stays on the device between steps (IO binding)."""

    providers: tuple[str, ...]
    provider_options: tuple[dict[str, str], ...]
    precision: Precision
    device: Literal["cuda", "cpu"]
    io_binding: bool

    @property
    def wants_cuda(self) -> bool:
        return self.providers[0] == CUDA


def runs_on_gpu(int8: bool) -> bool:
    """INT8 tiers stay on the CPU; every other tier goes to CUDA when it is offered."""
    return not int8


def _cuda_plan(int8: bool) -> SessionPlan:
    return SessionPlan(
        providers=(CUDA, CPU),
        provider_options=({"device_id": "0"}, {}),
        precision="int8" if int8 else "fp16",
        device="cuda",
        io_binding=True,
    )


def _cpu_plan(int8: bool) -> SessionPlan:
    return SessionPlan(providers=(CPU,), provider_options=({},), precision="int8" if int8 else "fp32", device="cpu", io_binding=False)


def plan_session(int8: bool, available: Sequence[str], *, requested: Sequence[str] | None = None) -> SessionPlan:
    """The plan for a tier (`int8`: is it quantized) given the providers this onnxruntime offers.

    `requested` (an explicit provider list) must name offered providers only; it is honoured as
    given, so a test or a user can force the CPU on a GPU machine.
    """
    if requested is not None:
        missing = [p for p in requested if p not in available]
        if missing or not requested:
            raise ValueError(f"Execution providers {list(requested)!r} are not all available; this onnxruntime offers {list(available)!r}.")
        if requested[0] == CUDA:
            return _cuda_plan(int8)
        return SessionPlan(providers=tuple(requested), provider_options=tuple({} for _ in requested),
                           precision="int8" if int8 else "fp32", device="cpu", io_binding=False)
    if runs_on_gpu(int8) and CUDA in available:
        return _cuda_plan(int8)
    return _cpu_plan(int8)


def parse_requirement(value: str | None, *, source: str = REQUIRE_ENV) -> str | None:
    """`"cuda"` or None (no requirement, also for ""); anything else is refused by name."""
    if value is None or not value.strip():
        return None
    name = value.strip().lower()
    if name not in REQUIREMENTS:
        raise ValueError(f'{source} is "{value}"; the only provider that can be required is "cuda" (or leave it unset).')
    return name


def installed_runtimes() -> list[str]:
    """`name version` of every ONNX Runtime build installed here; more than one means they overwrite
    each other's files and whichever was installed last is in charge."""
    found = []
    for name in RUNTIME_DISTRIBUTIONS:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return found


def _why_not(tier: str, in_use: str, available: Sequence[str]) -> str:
    runtimes = installed_runtimes()
    if len(runtimes) > 1:
        reason = (f"several ONNX Runtime builds are installed together ({', '.join(runtimes)}) and they overwrite each other; "
                  "uninstall all of them and install only the `gpu` extra")
    elif CUDA not in available:
        reason = f"this onnxruntime ({', '.join(runtimes) or 'unknown build'}) offers {list(available)!r}, without CUDA; {INSTALL_HINT}"
    else:
        reason = ("this onnxruntime offers CUDA but could not use it (no usable GPU, NVIDIA driver, or CUDA/cuDNN libraries; "
                  "ONNX Runtime's own log above says which)")
    return f'The {tier} tier must run on CUDA (require_provider "cuda"), but ONNX Runtime runs it on {in_use}: {reason}.'


def check_in_use(tier: str, int8: bool, in_use: str, require: str | None, available: Sequence[str]) -> None:
    """Raise ProviderRequirementError when `require` applies to this tier and `in_use` is not it.

    The requirement applies to GPU tiers only: an INT8 tier runs on the CPU by design.
    """
    if require is None or not runs_on_gpu(int8):
        return
    if in_use != REQUIREMENTS[require]:
        raise ProviderRequirementError(_why_not(tier, in_use, available))


def warmup_text_lengths(lengths: Sequence[int], device: str) -> list[int]:
    """Text lengths a warm-up runs. On CUDA each one (its shapes pick kernels and grow the arena);
    on the CPU the shortest only: its one-time costs (threads, arena, first kernels) are paid by
    any shape, and a 1,024-character text then runs as fast on its first call as after a warm-up
    at that length (docs/benchmarks.md, "Node warm-up")."""
    if device == "cuda" or not lengths:
        return list(lengths)
    return [min(lengths)]


def warmup_batch_sizes(max_batch_size: int, device: str) -> list[int]:
    """Batch sizes a warm-up runs. CUDA picks kernels and grows its memory arena per input shape,
    and a decode shrinks its batch as rows finish, so on CUDA every power of two up to the limit
    (and the limit) is warmed; the CPU needs only the smallest and the largest."""
    if device != "cuda":
        return sorted({1, max_batch_size})
    sizes = {1, max_batch_size}
    size = 2
    while size < max_batch_size:
        sizes.add(size)
        size *= 2
    return sorted(sizes)


def probe() -> dict[str, object]:
    """What a one-node session with CUDA first really runs on, in this process."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    available = ort.get_available_providers()
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "probe",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    plan = plan_session(False, available)
    if plan.wants_cuda:
        preload_cuda_libraries()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), sess_options=options, providers=list(plan.providers))
    return {"available": available, "in_use": session.get_providers()[0], "version": ort.__version__,
            "installed": installed_runtimes()}


def preload_cuda_libraries() -> None:
    """Load the CUDA and cuDNN libraries that the gpu extra installs as pip wheels (onnxruntime
    >= 1.21 knows where they are); without them the CUDA provider looks only in system paths."""
    import onnxruntime as ort

    if not hasattr(ort, "preload_dlls"):
        return
    try:
        ort.preload_dlls()
    except (OSError, RuntimeError):
        pass  # the session's own attempt to load the CUDA provider then says what is missing


def preflight(require: str | None, *, tier: str = "quality") -> dict[str, object] | None:
    """Check `require` in a child process (so this one never holds a CUDA context) before any node
    starts; raise ProviderRequirementError with the reason when it is not met."""
    if require is None:
        return None
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE_SCRIPT], capture_output=True,
                              text=True, timeout=PREFLIGHT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ProviderRequirementError(f"Checking for CUDA took over {PREFLIGHT_TIMEOUT_S:.0f} s; ONNX Runtime did not "
                                       "start a session.") from exc
    if done.returncode != 0:
        raise ProviderRequirementError(f"Checking for CUDA failed (exit {done.returncode}): {done.stderr.strip()[-1500:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    check_in_use(tier, False, str(found["in_use"]), require, list(found["available"]))
    return found
