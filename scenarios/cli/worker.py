"""`rushhour worker --master HOST:PORT`: lend this host's CPUs to a drill run elsewhere.

It starts a Locust worker (Locust's own distributed mode) that joins the master `rushhour run
--workers N` started. It proves the cluster secret (`RUSHHOUR_CLUSTER_SECRET` or
`--secret-file`) before it is welcomed; the master hands it its share of the schedule and the
start time, and receives its results over Locust's message channel, so nothing is written here but
a scratch folder. What it loads is its own decision: the target must pass this worker's loopback
guard (`--allow-remote`, `--allowed-host`), and the target's credential and CA bundle come from
this worker's flags, never from the master.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from rushhour.kernel.processes import die_with_parent, stop_process
from rushhour.scenarios.cli.errors import BadInput, finite
from rushhour.scenarios.cli.override_flags import allow_remote_option
from rushhour.scenarios.cli.scaleout import cluster_secret, parse_host_port

__all__ = ["parse_host_port", "worker", "worker_argv"]

EXIT_REFUSED = 2
EXIT_NO_MASTER = 3
DEFAULT_CONNECT_TIMEOUT_S = 60.0
WATCH_S = 0.2


def worker_argv(host: str, port: int) -> list[str]:
    from rushhour.scenarios.load.locust import OPEN_LOCUSTFILE

    return [sys.executable, "-m", "locust", "-f", str(OPEN_LOCUSTFILE), "--worker", "--master-host", host,
            "--master-port", str(port), "--loglevel", "WARNING"]


def _local_settings(allow_remote: bool, allowed_hosts: tuple[str, ...], auth_env: str | None,
                    auth_file: Path | None, auth_scheme: str, auth_header: str | None, ca_bundle: Path | None,
                    pinned: tuple[str, ...] = ()) -> str:
    """This worker's guard and credentials as `WorkerLocal` JSON (exit 2 on a bad value or combination)."""
    from rushhour.scenarios.generator.worker_local import WorkerLocal

    _check_allowed_hosts(allowed_hosts)
    auth = _auth(auth_env, auth_file, auth_scheme, auth_header)
    if ca_bundle is not None:
        _check_ca_bundle(ca_bundle)
    local = WorkerLocal(allow_remote=allow_remote, allowed_hosts=allowed_hosts, auth=auth,
                        ca_bundle=str(ca_bundle) if ca_bundle else None, pinned_hosts=_pinned(pinned))
    return local.to_env()


def _pinned(hosts: tuple[str, ...]) -> tuple[str, ...]:
    """--allow-target values as URL host names compare (lower case, no brackets); exit 2 on one that is not a host."""
    out = []
    for raw in hosts:
        host = raw.strip().strip("[]").lower()
        if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", host) and not _is_ipv6(host):
            raise BadInput(f'--allow-target: "{raw}" is not a host name or IP address (give the host alone, '
                           "without scheme, port or path).")
        out.append(host)
    return tuple(out)


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True


def _check_allowed_hosts(allowed_hosts: tuple[str, ...]) -> None:
    """The rules of a scenario's `load.allowed_hosts`: private, non-loopback IP addresses."""
    from pydantic import ValidationError

    from rushhour.kernel.validation import problem
    from rushhour.scenarios.spec.model import LoadSpec

    try:
        LoadSpec(allowed_hosts=allowed_hosts)
    except ValidationError as exc:
        raise BadInput(f"--allowed-host: {problem(dict(exc.errors()[0]))}.") from None


def _auth(auth_env: str | None, auth_file: Path | None, auth_scheme: str, auth_header: str | None
          ) -> dict[str, Any] | None:
    """The credential source as `AuthSpec` JSON, checked to be there now rather than at the first request."""
    from rushhour.scenarios.spec.target import AuthSpec

    if auth_scheme == "header" and not auth_header:
        raise BadInput("--auth-scheme header needs --auth-header, the header's name (e.g. X-API-Key).")
    if auth_header and auth_scheme != "header":
        raise BadInput(f'--auth-header "{auth_header}" is for --auth-scheme header (got "{auth_scheme}").')
    if auth_env and auth_file:
        raise BadInput("give one of --auth-env or --auth-file, not both.")
    if not auth_env and not auth_file:
        if auth_header:
            raise BadInput("--auth-header needs the credential: --auth-env VAR or --auth-file FILE.")
        return None
    if auth_env is not None:
        _check_auth_env(auth_env)
    if auth_file is not None:
        _check_auth_file(auth_file)
    try:
        spec = AuthSpec(scheme=auth_scheme, env=auth_env, file=str(auth_file) if auth_file else None,
                        header=auth_header)
    except ValueError as exc:
        raise BadInput(f"--auth-env/--auth-file/--auth-header: {exc}") from None
    return spec.model_dump(mode="json")


def _check_auth_env(name: str) -> None:
    from rushhour.scenarios.spec.target import AuthSpec

    try:
        AuthSpec(env=name)
    except ValueError:
        raise BadInput(f'--auth-env: "{name}" is not a valid variable name.') from None
    if not os.environ.get(name, "").strip():
        raise BadInput(f'--auth-env: the variable "{name}" is not set (or empty) on this worker; export the '
                       "credential first.")


def _check_auth_file(path: Path) -> None:
    from rushhour.kernel.textfile import TextFileError, read_text_file

    try:
        text = read_text_file(path.expanduser())
    except TextFileError as exc:
        raise BadInput(f"--auth-file: {exc}") from None
    if not text.strip():
        raise BadInput(f'--auth-file: "{path}" is empty.')


def _check_ca_bundle(path: Path) -> None:
    """The bundle as the load workers will read it: PEM certificates an SSL context accepts."""
    try:
        ssl.create_default_context(cafile=str(path))
    except (ssl.SSLError, ValueError, UnicodeDecodeError):
        raise BadInput(f'--ca-bundle: "{path}" holds no PEM certificates (-----BEGIN CERTIFICATE-----).') from None
    except OSError as exc:
        raise BadInput(f'--ca-bundle: "{path}" could not be read ({exc.strerror}).') from None


@click.command("worker")
@click.option("--master", "master", required=True, help="HOST:PORT of the master (`rushhour run --workers N`).")
@click.option("--name", help="This host's name in the results (default: its hostname).")
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Scratch folder for the share and unsent parts (default: a fresh temporary folder).")
@click.option("--secret-file", type=click.Path(dir_okay=False, path_type=Path),
              help="The cluster secret to prove to the master (default: RUSHHOUR_CLUSTER_SECRET).")
@click.option("--connect-timeout", type=click.FloatRange(min=1.0), default=DEFAULT_CONNECT_TIMEOUT_S,
              callback=finite,
              show_default=True, help="Seconds to wait for the master to welcome this worker before giving up (exit 3).")
@allow_remote_option("Load a target that is not on this machine, if the master names one.")
@click.option("--allowed-host", "allowed_hosts", multiple=True,
              help="A private test address this worker may load without --allow-remote (repeatable).")
@click.option("--allow-target", "pinned", multiple=True,
              help="A target host this worker may load and send its credential to (repeatable); with --auth-env/"
                   "--auth-file, the credential goes to no other host but this machine's.")
@click.option("--auth-env", help="The target's credential: this environment variable (this host's).")
@click.option("--auth-file", type=click.Path(dir_okay=False, path_type=Path),
              help="The target's credential: this file (this host's).")
@click.option("--auth-scheme", type=click.Choice(["bearer", "header", "basic"]), default="bearer", show_default=True,
              help="How the credential is sent (as target.auth.scheme).")
@click.option("--auth-header", help="With --auth-scheme header: the header's name (e.g. X-API-Key).")
@click.option("--ca-bundle", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="https: verify the target against these CA certificates (this host's file).")
def worker(master: str, name: str | None, work_dir: Path | None, secret_file: Path | None, connect_timeout: float,
           allow_remote: bool, allowed_hosts: tuple[str, ...], pinned: tuple[str, ...], auth_env: str | None,
           auth_file: Path | None, auth_scheme: str, auth_header: str | None, ca_bundle: Path | None) -> None:
    """Join a drill's Locust master as one load worker; returns when the master ends the run.

    Exit codes: 0 the run ended, 2 bad usage or refused (the secret did not match, another
    version, no worker index free, or a target this worker's guard refuses), 3 no master
    welcomed it within --connect-timeout.
    """
    from rushhour.scenarios.generator.clusterauth import SECRET_ENV
    from rushhour.scenarios.generator.worker_local import ENV_WORKER_LOCAL
    from rushhour.scenarios.generator.worker_relay import ENV_REMOTE_WORK, ENV_WORKER_NAME, JOINED_FILE, STATUS_FILE
    from rushhour.scenarios.load.locust import proxy_free_env

    host, port = parse_host_port(master, "--master")
    secret = cluster_secret(secret_file)
    local = _local_settings(allow_remote, allowed_hosts, auth_env, auth_file, auth_scheme, auth_header, ca_bundle,
                            pinned)
    created = work_dir is None or not work_dir.exists()
    work = work_dir or Path(tempfile.mkdtemp(prefix="rushhour-worker-"))
    work.mkdir(parents=True, exist_ok=True)
    for stale in (JOINED_FILE, STATUS_FILE):  # a reused scratch folder's last run says nothing of this one
        (work / stale).unlink(missing_ok=True)
    env = {**proxy_free_env(), ENV_REMOTE_WORK: str(work.resolve()), ENV_WORKER_LOCAL: local}  # no rushhour secret
    if secret:
        env[SECRET_ENV] = secret
    if name:
        env[ENV_WORKER_NAME] = name
    try:
        code = _join(host, port, work, env, connect_timeout)
        _finish(work, code, _address(host, port), connect_timeout)
    finally:
        if created and not (work / JOINED_FILE).exists():
            shutil.rmtree(work, ignore_errors=True)


def _join(host: str, port: int, work: Path, env: dict[str, str], connect_timeout: float) -> int | None:
    """Run the Locust worker until the run ends; its exit code (None: no master welcomed it)."""
    click.echo(f"joining the master at {_address(host, port)} (scratch folder {work}) ...", err=True)
    proc = subprocess.Popen(worker_argv(host, port), env=env, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
    try:
        return _wait(proc, work, connect_timeout)
    except KeyboardInterrupt:
        return 130
    finally:
        stop_process(proc, grace_s=10.0)


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _wait(proc: subprocess.Popen[bytes], work: Path, connect_timeout: float) -> int | None:
    """The Locust worker's exit code; None when no master welcomed it within `connect_timeout`."""
    from rushhour.scenarios.generator.worker_relay import JOINED_FILE, STATUS_FILE

    give_up = time.monotonic() + connect_timeout
    while proc.poll() is None:
        if not (work / JOINED_FILE).exists() and not (work / STATUS_FILE).exists() and time.monotonic() > give_up:
            return None
        time.sleep(WATCH_S)
    return proc.returncode


def _finish(work: Path, code: int | None, master: str, connect_timeout: float) -> None:
    from rushhour.scenarios.generator.worker_relay import JOINED_FILE, STATUS_FILE

    refused = work / STATUS_FILE
    if refused.exists():
        click.echo(f"refused: {refused.read_text(encoding='utf-8')}", err=True)
        raise SystemExit(EXIT_REFUSED)
    if code is None or not (work / JOINED_FILE).exists():
        click.echo(f"no master welcomed this worker: waited {connect_timeout:g} s for the master at {master} "
                   "(is `rushhour run --workers N` running there, and is the port reachable?); giving up.", err=True)
        raise SystemExit(EXIT_NO_MASTER)
    click.echo("the master ended the run.", err=True)
    if code:
        raise SystemExit(code)
