"""`rushhour worker --master HOST:PORT`: lend this host's CPUs to a drill run elsewhere.

It starts a Locust worker (Locust's own distributed mode) that joins the master `rushhour run
--workers N` started; the master hands it its share of the schedule, the start time and the
target, and receives its results over Locust's message channel, so nothing is written here but
a scratch folder. A worker of another version is refused with the reason (exit 2).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import click

from scenarios.cli.errors import BadInput
from kernel.processes import die_with_parent, stop_process

EXIT_REFUSED = 2


def parse_host_port(value: str, option: str) -> tuple[str, int]:
    """"HOST:PORT" (or "[v6]:PORT") as a pair; exit 2 naming the option otherwise."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInput(f'{option}: "{value}" is not HOST:PORT (e.g. 10.0.0.5:5557).')
    return host, int(port)


def worker_argv(host: str, port: int) -> list[str]:
    from scenarios.load.locust import OPEN_LOCUSTFILE

    return [sys.executable, "-m", "locust", "-f", str(OPEN_LOCUSTFILE), "--worker", "--master-host", host,
            "--master-port", str(port), "--loglevel", "WARNING"]


@click.command("worker")
@click.option("--master", "master", required=True, help="HOST:PORT of the master (`rushhour run --workers N`).")
@click.option("--name", help="This host's name in the results (default: its hostname).")
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Scratch folder for the share and unsent parts (default: a fresh temporary folder).")
def worker(master: str, name: str | None, work_dir: Path | None) -> None:
    """Join a drill's Locust master as one load worker; returns when the master ends the run.

    Exit codes: 0 the run ended, 2 bad usage or refused by the master (another version).
    """
    from scenarios.load.locust import proxy_free_env
    from scenarios.load.worker_relay import (
        ENV_REMOTE_WORK,
        ENV_WORKER_NAME,
        STATUS_FILE,
    )

    host, port = parse_host_port(master, "--master")
    work = work_dir or Path(tempfile.mkdtemp(prefix="rushhour-worker-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**proxy_free_env(), ENV_REMOTE_WORK: str(work.resolve())}
    if name:
        env[ENV_WORKER_NAME] = name
    click.echo(f"joining the master at {host}:{port} (scratch folder {work}) ...", err=True)
    proc = subprocess.Popen(worker_argv(host, port), env=env, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        code = 130
    finally:
        stop_process(proc, grace_s=10.0)
    refused = work / STATUS_FILE
    if refused.exists():
        click.echo(f"refused: {refused.read_text(encoding='utf-8')}", err=True)
        raise SystemExit(EXIT_REFUSED)
    click.echo("the master ended the run.", err=True)
    if code:
        raise SystemExit(code)
