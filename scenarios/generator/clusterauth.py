"""The shared secret of a drill across hosts: who may join, and which messages are theirs.

Locust's own channel between master and workers carries no authentication, so rushhour adds it
on top with HMAC-SHA256 (RFC 2104) over a secret both sides hold (`RUSHHOUR_CLUSTER_SECRET` or
`--secret-file`):

- the worker's hello carries its own fresh nonce; the master answers with a fresh nonce of its
  own and HMAC(secret, "master" | worker nonce | nonce | node id), so the worker knows it speaks
  to a holder of the secret before it answers or accepts anything (a master without the secret
  learns nothing from it, and cannot use it to answer another master's challenge);
- the worker then returns HMAC(secret, "hello" | nonce | node id), so a recorded answer is worth
  nothing for the next nonce, and the secret never crosses the wire;
- both then derive a session key HMAC(secret, "session" | nonce | worker nonce | node id), and
  every later message, in both directions, carries HMAC(session key, type | index | sequence
  number | content), with sequence numbers that only rise: the master checks it against the node
  it welcomed for that index, the worker against the master that proved itself (a replayed
  configuration, start or refusal is dropped).

The secret authenticates; it does not encrypt: the schedule and results cross the network in
the clear. On an untrusted network run the channel through a tunnel (SSH, WireGuard) or fence it
with a NetworkPolicy. Without a secret, both sides use the empty key: enough to tell which node
was welcomed for which index on one machine, and the reason a bind beyond loopback needs a secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

__all__ = ["SECRET_ENV", "SecretError", "mac", "master_proof", "new_nonce", "proof", "read_secret", "same",
           "session_key"]

SECRET_ENV = "RUSHHOUR_CLUSTER_SECRET"
MIN_SECRET_CHARS = 16
NONCE_BYTES = 16
MAC_FIELD = "mac"
SEQ_FIELD = "seq"


class SecretError(ValueError):
    """The cluster secret could not be read, or is too short to be one."""


def read_secret(secret_file: Path | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The secret from `secret_file` (whitespace stripped), else from `RUSHHOUR_CLUSTER_SECRET`;
    None when neither is given. Raises SecretError naming the file or variable that is unusable."""
    if secret_file is not None:
        try:
            value = Path(secret_file).expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise SecretError(f'--secret-file: "{secret_file}" could not be read ({exc.strerror}).') from exc
        where = f'--secret-file "{secret_file}"'
    else:
        value = (os.environ if environ is None else environ).get(SECRET_ENV, "").strip()
        if not value:
            return None
        where = SECRET_ENV
    if len(value) < MIN_SECRET_CHARS:
        raise SecretError(f"{where}: the cluster secret has {len(value)} characters; use at least "
                          f"{MIN_SECRET_CHARS} (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`).")
    return value


def new_nonce() -> str:
    """A fresh challenge (hex), never reused: each hello gets its own."""
    return secrets.token_hex(NONCE_BYTES)


def _hmac(key: bytes, *parts: bytes) -> str:
    body = b"".join(len(part).to_bytes(8, "big") + part for part in parts)  # length-prefixed: no ambiguity
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def proof(secret: str | None, nonce: str, node_id: str) -> str:
    """The worker's answer to a challenge: it holds the secret, for this nonce and this node."""
    return _hmac((secret or "").encode(), b"hello", nonce.encode(), node_id.encode())


def master_proof(secret: str | None, worker_nonce: str, nonce: str, node_id: str) -> str:
    """The master's answer to a worker's hello: it holds the secret, for this worker's nonce."""
    return _hmac((secret or "").encode(), b"master", worker_nonce.encode(), nonce.encode(), node_id.encode())


def session_key(secret: str | None, nonce: str, node_id: str, worker_nonce: str = "") -> bytes:
    """The key of one welcomed worker's messages, both ways (bound to both nonces and the node)."""
    return bytes.fromhex(_hmac((secret or "").encode(), b"session", nonce.encode(), worker_nonce.encode(),
                               node_id.encode()))


def same(given: object, expected: str) -> bool:
    """True when `given` is the string `expected` (constant-time comparison)."""
    return isinstance(given, str) and hmac.compare_digest(given, expected)


def _content(data: Mapping[str, object]) -> list[bytes]:
    parts: list[bytes] = []
    for key in sorted(k for k in data if k != MAC_FIELD):
        value = data[key]
        raw = value if isinstance(value, bytes) else json.dumps(value, sort_keys=True).encode()
        parts += [key.encode(), raw]
    return parts


def mac(key: bytes, msg_type: str, data: Mapping[str, object]) -> str:
    """The MAC of one message: its type, and every field (index and sequence number included)."""
    return _hmac(key, msg_type.encode(), *_content(data))


def signed(key: bytes, msg_type: str, data: dict[str, object], seq: int) -> dict[str, object]:
    """`data` with its sequence number and MAC added, ready to send."""
    out = {**data, SEQ_FIELD: seq}
    out[MAC_FIELD] = mac(key, msg_type, out)
    return out


def verify(key: bytes, msg_type: str, data: Mapping[str, object]) -> bool:
    """True when the message's MAC is right for `key` (constant-time comparison)."""
    given = data.get(MAC_FIELD)
    return isinstance(given, str) and hmac.compare_digest(given, mac(key, msg_type, data))
