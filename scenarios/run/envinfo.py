"""What the drill ran on, for `run_start`: numbers are only comparable on a known machine."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path

import psutil

PACKAGES = ("rushhour", "locust", "onnxruntime", "numpy", "pandas", "pydantic", "chaostoolkit")


def cpu_model() -> str:
    """The CPU's marketing name where Linux tells it, else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def package_versions() -> dict[str, str]:
    versions: dict[str, str] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def git_commit(cwd: Path | None = None) -> str | None:
    """The checked-out commit (with "-dirty" if there are changes), or None outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                                text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit}-dirty" if dirty else commit


def gpu() -> str:
    """The GPUs nvidia-smi lists, or "none" (the execution provider that ran is in the report too)."""
    try:
        names = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=5, check=True).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return "none"
    names = [n.strip() for n in names if n.strip()]
    return ", ".join(names) or "none"


def machine_facts() -> dict[str, object]:
    return {
        "cpu_model": cpu_model(), "cpu_cores": os.cpu_count(), "gpu": gpu(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1), "os": platform.platform(),
        "python": sys.version.split()[0], "packages": package_versions(),
        "git_commit": git_commit(Path(__file__).resolve().parent),
    }
