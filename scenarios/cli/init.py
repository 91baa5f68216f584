"""`rushhour init`: probe a running service and write a first scenario for it.

A new user's first drill of their own service should not start from a blank file: `init` asks the
service what it speaks (with the drill's own probe, `rushhour.scenarios.cli.identify`), writes a commented
scenario with a gentle traffic shape, SLOs to edit and a chaos section for the service's own
process (live with `--pid-file`, else commented out), and prints the command that runs it. A
service it cannot identify still gets a scenario: the `http` protocol with a body template to
edit. It never overwrites a file, and refuses a target off this machine as `rushhour run` does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import click

from rushhour.kernel.loopback import is_loopback_url
from rushhour.scenarios.cli.errors import BadInput
from rushhour.scenarios.cli.identify import Identity, Unreachable, identify, probe_http
from rushhour.scenarios.cli.init_template import HTTP_TEMPLATE, Draft, render
from rushhour.scenarios.cli.override_flags import allow_remote_option
from rushhour.scenarios.cli.schema import SCHEMA_FILE
from rushhour.scenarios.protocols.admission import Context, Needs, Refused, admit
from rushhour.scenarios.protocols.probe import ProbeError
from rushhour.scenarios.spec.target import PROTOCOL_NAMES, AuthSpec, TargetProtocol
from rushhour.scenarios.spec.urls import hide_userinfo

DEFAULT_OUT = Path("my-service.yaml")
Echo = Callable[[str], None]


@click.command()
@click.option("--target", "url", required=True, metavar="URL", help="The service's base URL, e.g. http://127.0.0.1:8001.")
@click.option("--protocol", type=click.Choice(PROTOCOL_NAMES), default=None,
              help="The protocol it speaks; without it, rushhour, openai-chat and kserve-v2 are tried in turn.")
@click.option("--model", default=None, help="The model to drill (openai-chat, kserve-v2), when the service lists none or several.")
@click.option("--auth-env", default=None, metavar="VAR",
              help="An environment variable holding a bearer credential, used by the probe and named in the scenario.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_OUT, show_default=True,
              help="The scenario file to write; an existing file is never overwritten.")
@click.option("--name", default=None, help="The scenario's name (default: the file name without .yaml).")
@allow_remote_option("Probe a service that is not on this machine.")
@click.option("--pid-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The file the service's PID is in: the scenario then pauses and kills that process in the middle "
                   "of the load (without it, that chaos section is written commented out).")
def init(url: str, protocol: str | None, model: str | None, auth_env: str | None, out: Path, name: str | None,
         allow_remote: bool, pid_file: Path | None = None) -> None:
    """Probe a service and write a commented scenario that drills it.

    The probe finds which protocol the service speaks (rushhour, openai-chat or kserve-v2), the
    models it lists and whether it streams; the scenario gets a gentle traffic shape, SLOs to edit
    and a chaos section for the service's process (a pause and a kill, live with --pid-file) and,
    commented out, its network path and Kubernetes workload. An unidentified service gets an
    `http` protocol template to edit. Exit 2 when the file exists, the URL is off this machine
    without --allow-remote, nothing answers, the service wants a credential it did not get
    (--auth-env), or the --pid-file is not there.
    """
    scenario_name = _name(name or out.stem)
    if out.exists():
        raise BadInput(f'--out: "{out}" already exists; rushhour init never overwrites a file. Choose another '
                       "--out, or remove it first.")
    _guard(url, allow_remote)
    auth = _auth(auth_env)
    pid_path = _pid_file(pid_file)
    try:
        identity = identify(url, protocol=protocol, auth=auth, model=model)
    except Unreachable as exc:
        raise BadInput(f"--target: {exc}") from exc
    if protocol == "http":
        target, seen = _http_target(url, auth, click.echo, identified=True)
    else:
        target, seen = _choose(identity, auth, model, say=click.echo)
    text = render(Draft(scenario_name, url.rstrip("/"), target, seen, _schema_ref(out), pid_file=pid_path))
    _write(out, text)
    click.echo(f"wrote {out}")
    remote = "" if is_loopback_url(url) else " --allow-remote"
    click.echo(f"check it:  rushhour run {out} --dry-run{remote}   (the plan and one probe request)")
    click.echo(f"run it:    rushhour run {out}{remote}")


def _name(raw: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", raw).strip("-._") or "my-service"
    return name if name[0].isalnum() else f"s{name}"


def _guard(url: str, allow_remote: bool) -> None:
    shown = hide_userinfo(url)
    if not url.startswith(("http://", "https://")):
        raise BadInput(f'--target: "{shown}" must start with http:// or https://.')
    parts = urlsplit(url)
    if "@" in parts.netloc:
        raise BadInput(f'--target: "{shown}" carries credentials (user:password@); pass the credential with '
                       "--auth-env VAR instead, so it never reaches the scenario file.")
    if not parts.hostname:
        raise BadInput(f'--target: "{shown}" names no host.')
    _check_port(parts.netloc.rpartition("]")[2].rpartition(":")[2] if ":" in parts.netloc else "", shown)
    answer = admit(url, Needs(TargetProtocol()), Context(field="--target", allow_remote=allow_remote, probe=False))
    if isinstance(answer, Refused):
        raise BadInput(answer.sentence)


def _check_port(port: str, shown: str) -> None:
    """The URL's port, when it names one: a number from 1 to 65535."""
    if not port:
        return
    if not port.isascii() or not port.isdigit():
        raise BadInput(f'--target: "{shown}" has port "{port}", which is not a number.')
    if not 0 < int(port) < 65536:
        raise BadInput(f'--target: "{shown}" has port {port}, which is out of range (1 to 65535).')


def _pid_file(pid_file: Path | None) -> str | None:
    """The PID file as an absolute path (the experiments run in another folder), which must exist."""
    if pid_file is None:
        return None
    if not pid_file.is_file():
        raise BadInput(f'--pid-file: "{pid_file}" is not a file; give the file your service (or its supervisor) '
                       "writes its process id to.")
    return str(pid_file.resolve())


def _auth(auth_env: str | None) -> AuthSpec | None:
    if auth_env is None:
        return None
    try:
        auth = AuthSpec(env=auth_env)
    except ValueError:
        raise BadInput(f'--auth-env: "{auth_env}" is not a valid variable name.') from None
    if not os.environ.get(auth_env):
        raise BadInput(f'--auth-env: the variable "{auth_env}" is not set (or empty); export the credential first.')
    return auth


def _choose(identity: Identity, auth: AuthSpec | None, model: str | None, *, say: Echo
            ) -> tuple[TargetProtocol, list[str]]:
    """The target fields for the scenario and the lines saying what was seen; says why when unidentified."""
    best = identity.best
    if best is not None:
        seen = [f.line.replace("probe      ", "") for f in identity.found]
        seen += [f"{f.target.protocol} lists models: {', '.join(f.models)}" for f in identity.found if f.models]
        if best.target.protocol == "openai-chat" and not best.models and not model:
            seen.append('it lists no model (GET /v1/models), so the scenario sends "default": set target.model')
        for line in seen:
            say(line)
        if len(identity.found) > 1:
            say(f"it speaks {', '.join(f.target.protocol for f in identity.found)}; the scenario uses "
                f"{best.target.protocol} (--protocol chooses another)")
        return best.target, seen
    for protocol, why in identity.misses.items():
        say(f"not {protocol}: {why}")
    if any("refused the credential" in why for why in identity.misses.values()):
        hint = "check the credential in" if auth else "export it and pass"
        raise BadInput(f"--target: {identity.url} wants a credential it did not get; {hint} --auth-env VAR.")
    say(f"rushhour could not tell what {identity.url} speaks, so the scenario uses the http protocol with a body "
        "template: edit target.http (path, body) to the request your service expects.")
    return _http_target(identity.url, auth, say)


def _http_target(url: str, auth: AuthSpec | None, say: Echo, *, identified: bool = False
                 ) -> tuple[TargetProtocol, list[str]]:
    """The `http` template as the target, with what its probe got (a miss is fine: it is to be edited)."""
    target = TargetProtocol(protocol="http", http=HTTP_TEMPLATE, auth=auth)
    lead = "http, as asked" if identified else "not identified"
    try:
        line = probe_http(url, HTTP_TEMPLATE, auth).line().replace("probe      ", "")
        seen = [f"{lead}; the http template's probe: {line}"]
    except ProbeError as exc:
        seen = [f"{lead}; the http template's probe failed: {exc}"]
    say(seen[0])
    return target, seen


def _schema_ref(out: Path) -> str:
    """The schema file as seen from the scenario's folder (editors resolve it relative to the file);
    its absolute path when the two share no folder but the root."""
    folder = out.resolve().parent
    if os.path.commonpath([folder, SCHEMA_FILE]) == os.sep:
        return str(SCHEMA_FILE)
    return os.path.relpath(SCHEMA_FILE, start=folder)


def _write(out: Path, text: str) -> None:
    try:
        with out.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError as exc:
        raise BadInput(f'--out: "{out}" already exists; rushhour init never overwrites a file.') from exc
    except OSError as exc:
        raise BadInput(f'--out: cannot write "{out}": {exc.strerror}.') from exc
