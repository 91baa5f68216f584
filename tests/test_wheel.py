"""The distribution as a user installs it: the wheel built from the tracked files, its top level
`rushhour` alone, installed into a fresh virtual environment and run from a folder where the
checkout cannot be imported.

The fresh environment gets the wheel and nothing else from an index: its dependencies are read from
this environment's site-packages through a path entry (not a site directory, so this checkout's
editable install is not activated there), which keeps the test offline and quick.
"""

from __future__ import annotations

import email.parser
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.stub import Answer, stub_server

REPO = Path(__file__).resolve().parents[1]
CHAT: dict[str, Answer] = {"/v1/chat/completions": (200, {}, {
    "id": "c", "object": "chat.completion", "model": "mine", "usage": {"completion_tokens": 1},
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hallo"}, "finish_reason": "stop"}]})}


def _tracked_copy(dest: Path) -> Path:
    """The checkout's files that git does not ignore (tracked, or new and not yet committed), so
    nothing built or left over in it (build/, *.egg-info, results/) gets in."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True, timeout=60).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = _tracked_copy(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("dist")
    done = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                 "-w", str(out), str(source)], cwd=source, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    (built,) = out.glob("rushhour-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh venv with the wheel in it; yields its bin folder and an environment without the checkout."""
    venv = tmp_path_factory.mktemp("venv")
    done = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=venv, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    python = venv / "bin" / "python"
    done = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                 str(wheel)], cwd=venv, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=venv,
                   env={"PATH": "/usr/bin:/bin"}).stdout.strip()
    (Path(purelib) / "rushhour-test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    home = tmp_path_factory.mktemp("home")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "NO_COLOR": "1",
           "RUSHHOUR_STATE_DIR": str(home / "state")}
    yield venv / "bin", env


@pytest.mark.slow
def test_wheel_top_level_is_rushhour_alone_with_license_and_data(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
        metadata = email.parser.Parser().parsestr(archive.read(f"{dist_info}/METADATA").decode())
        top_level = archive.read(f"{dist_info}/top_level.txt").decode().split()
    assert {name.split("/")[0] for name in names} == {"rushhour", dist_info}
    assert top_level == ["rushhour"]
    assert metadata["License-Expression"] == "Apache-2.0" and metadata.get_all("License-File") == ["LICENSE"]
    assert f"{dist_info}/licenses/LICENSE" in names
    assert any(c.startswith("Topic :: ") for c in metadata.get_all("Classifier") or [])
    for data in ("rushhour/scenarios/smoke.yaml", "rushhour/scenarios/scenario.schema.json",
                 "rushhour/experiments/kubernetes/sweeper.yaml", "rushhour/experiments/network-partition.json"):
        assert data in names, f"{data} is not in the wheel"
    assert not any(name.startswith(("rushhour/tests/", "rushhour/benchmarks/")) for name in names)


@pytest.mark.slow
def test_installed_wheel_runs_help_dry_run_and_init_outside_the_checkout(installed: tuple[Path, dict[str, str]],
                                                                        tmp_path: Path) -> None:
    bin_dir, env = installed
    where = _run([str(bin_dir / "python"), "-c", "import rushhour.kernel as k; print(k.__file__)"], tmp_path, env)
    assert where.returncode == 0 and str(bin_dir.parent) in where.stdout, where.stdout + where.stderr
    bare = _run([str(bin_dir / "python"), "-c", "import kernel"], tmp_path, env)
    assert bare.returncode != 0 and "No module named 'kernel'" in bare.stderr
    done = _run([str(bin_dir / "rushhour"), "--help"], tmp_path, env)
    assert done.returncode == 0 and "run" in done.stdout and "init" in done.stdout, done.stderr
    done = _run([str(bin_dir / "rushhour"), "run", "smoke", "--dry-run"], tmp_path, env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "smoke" in done.stdout
    out = tmp_path / "mine.yaml"
    with stub_server(CHAT) as (url, asked):
        done = _run([str(bin_dir / "rushhour"), "init", "--target", url, "--protocol", "openai-chat", "--model", "mine",
                     "--out", str(out)], tmp_path, env)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert "/v1/chat/completions" in asked and out.is_file()
        done = _run([str(bin_dir / "rushhour"), "run", str(out), "--dry-run"], tmp_path, env)  # probes the stand-in
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "openai-chat, model mine" in done.stdout
    assert not (tmp_path / "rushhour").exists() and not list(tmp_path.glob("*.egg-info"))
