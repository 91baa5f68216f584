"""The target's credential, read from an environment variable or a file when a request is built.

The scenario names only where the credential is (`auth: {env: NAME}` or `{file: PATH}`); the
value lives in memory of the process that sends and is never written into results, events or
reports. Anything shown to a person goes through `mask`.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

from rushhour.scenarios.spec.target import AuthSpec, is_secret_header

__all__ = ["CredentialError", "auth_headers", "describe_auth", "mask", "masked_headers"]

VISIBLE_TAIL = 4
MIN_LENGTH_FOR_TAIL = 12


class CredentialError(ValueError):
    """The credential a target needs could not be read; the message names where it was looked for."""


def read_secret(auth: AuthSpec) -> str:
    """The credential's value (stripped), from the variable or file the scenario names."""
    if auth.env is not None:
        value = os.environ.get(auth.env, "").strip()
        if not value:
            raise CredentialError(f'target.auth.env: the environment variable "{auth.env}" is not set or empty.')
        return value
    path = Path(str(auth.file)).expanduser()
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise CredentialError(f'target.auth.file: "{path}" could not be read ({exc.strerror}).') from exc
    if not value:
        raise CredentialError(f'target.auth.file: "{path}" is empty.')
    return value


def auth_headers(auth: AuthSpec | None) -> dict[str, str]:
    """The header that carries the credential (none without `auth`)."""
    if auth is None:
        return {}
    secret = read_secret(auth)
    if auth.scheme == "bearer":
        return {"Authorization": f"Bearer {secret}"}
    if auth.scheme == "basic":
        return {"Authorization": "Basic " + base64.b64encode(secret.encode("utf-8")).decode("ascii")}
    return {str(auth.header): secret}


def mask(value: str) -> str:
    """A secret as a person may see it: stars, and the last 4 characters of a long one."""
    if len(value) < MIN_LENGTH_FOR_TAIL:
        return "****"
    return "****" + value[-VISIBLE_TAIL:]


def masked_headers(headers: dict[str, str]) -> dict[str, str]:
    """Headers with every credential-bearing value masked (the scheme word of Authorization kept)."""
    shown = {}
    for name, value in headers.items():
        if is_secret_header(name):
            scheme, _, rest = value.partition(" ")
            shown[name] = f"{scheme} {mask(rest)}" if rest else mask(value)
        else:
            shown[name] = value
    return shown


def describe_auth(auth: AuthSpec | None) -> str:
    """One line for the dry run: where the credential comes from and whether it is there (masked)."""
    if auth is None:
        return "none"
    where = f"env {auth.env}" if auth.env is not None else f"file {auth.file}"
    try:
        value = mask(read_secret(auth))
    except CredentialError:
        value = "MISSING"
    carrier = auth.header if auth.scheme == "header" else f"Authorization: {auth.scheme}"
    return f"{carrier} from {where} ({value})"
