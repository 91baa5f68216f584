"""The one HTTP client every local action and probe goes through.

Chaos Toolkit hands each activity a `configuration` and `secrets` mapping; this module turns them
into a small typed `AdminClient`, so that the URL default, the bearer token and the conversion of
transport and HTTP errors into `ActivityFailed` (whole sentences naming the URL and status) live
in one place instead of being repeated in twenty activities.

Its connections go where the drill's guard looked: the drill hands its pinned host names to the
`chaos run` process in RUSHHOUR_PINNED_HOSTS, and every request connects through
`rushhour.kernel.pinned_http.pinned_transport`, so a name that resolves elsewhere once the drill
admitted it (DNS rebinding) cannot carry the admin token to another host.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx
from chaoslib.exceptions import ActivityFailed

from rushhour.kernel.loopback import is_loopback_url, refused_address
from rushhour.kernel.pinned_http import pinned_transport
from rushhour.kernel.pinning import load_pins, pinned

__all__ = ["AdminClient", "DEFAULT_TIMEOUT_S", "DEFAULT_URL", "client_from", "guarded_url", "take_drill_pins"]

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT_S = 10.0


class AdminClient:
    """Calls the reference server's public and admin endpoints; the token never reaches `repr`."""

    def __init__(
        self, *, url: str = DEFAULT_URL, token: str = "", timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self.timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"AdminClient(url={self.url!r}, token={'***' if self._token else '<none>'})"

    @property
    def token(self) -> str:
        """The bearer token, for a child that acts on this server later (a lease keeper's environment)."""
        return self._token

    def _http(self) -> httpx.Client:
        """A fresh client: proxy variables ignored for a loopback server (the token never goes to
        a proxy), redirects never followed (an answer is judged where it was asked), and a name
        connected at the addresses the drill pinned (or checked and pinned at its first connection)."""
        take_drill_pins()
        return httpx.Client(timeout=self.timeout_s, trust_env=not is_loopback_url(self.url), follow_redirects=False,
                            transport=pinned_transport())

    def get_json(self, path: str) -> Any:
        return self._request("GET", path).json()

    def get_text(self, path: str) -> str:
        return self._request("GET", path).text

    def status_code(self, path: str) -> int:
        """The HTTP status of GET `path`, 0 when the server cannot be reached at all."""
        try:
            with self._http() as http:
                return http.get(self.url + path).status_code
        except httpx.HTTPError:
            return 0

    def post(self, path: str, body: Mapping[str, Any] | None = None) -> Any:
        return _json_or_empty(self._request("POST", path, body=body, admin=True))

    def delete(self, path: str) -> Any:
        return _json_or_empty(self._request("DELETE", path, admin=True))

    def request_raw(self, method: str, path: str, body: Mapping[str, Any]) -> httpx.Response:
        """Send without judging the status: probes that measure the service want every answer."""
        try:
            with self._http() as http:
                return http.request(method, self.url + path, json=dict(body))
        except httpx.HTTPError as exc:
            raise ActivityFailed(f"Could not reach {self.url}{path}: {exc}.") from exc

    def _request(
        self, method: str, path: str, *, body: Mapping[str, Any] | None = None, admin: bool = False
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self._token}"} if admin else {}
        target = self.url + path
        try:
            with self._http() as http:
                response = http.request(
                    method, target, headers=headers, json=dict(body) if body is not None else None
                )
        except httpx.HTTPError as exc:
            raise ActivityFailed(f"Could not reach {method} {target}: {exc}.") from exc
        if response.is_redirect:
            location = response.headers.get("location", "")
            raise ActivityFailed(f'{method} {target} answered {response.status_code} with a redirect to "{location}"; '
                                 "rushhour never follows redirects (they could lead off the guarded target).")
        if response.status_code >= 400:
            raise ActivityFailed(_describe_failure(method, target, response))
        return response


def client_from(
    configuration: Mapping[str, Any] | None, secrets: Mapping[str, Any] | None
) -> AdminClient:
    """Build the client from the experiment's `rushhour_url` configuration and `admin_token` secret.

    The environment is the fallback so that activities also work when called from Python
    directly, outside `chaos run`.
    """
    config = configuration or {}
    url = guarded_url(config)
    token = _find_token(secrets) or os.environ.get("RUSHHOUR_ADMIN_TOKEN", "")
    timeout_s = float(config.get("rushhour_timeout_s", DEFAULT_TIMEOUT_S))
    return AdminClient(url=url, token=token, timeout_s=timeout_s)


def guarded_url(configuration: Mapping[str, Any] | None) -> str:
    """The server URL an activity may contact. Under a drill, RUSHHOUR_URL is the target the drill
    guarded, and an experiment's `rushhour_url` must be that same URL: a literal naming another
    host is refused, so an experiment file cannot send the admin token elsewhere. Whatever the
    URL, the guard's addresses that are never contacted (link-local, metadata, ...) are refused."""
    configured = str((configuration or {}).get("rushhour_url") or "")
    drill = os.environ.get("RUSHHOUR_URL", "")
    if drill and configured and configured.rstrip("/") != drill.rstrip("/"):
        raise ActivityFailed(f'The experiment\'s rushhour_url "{configured}" is not the drill\'s guarded target '
                             f'"{drill}"; an experiment reads the target from RUSHHOUR_URL '
                             '({"type": "env", "key": "RUSHHOUR_URL"}), never from a literal of its own.')
    url = configured or drill or DEFAULT_URL
    take_drill_pins()
    reason = None if _pinned_host(url) else refused_address(url, allow_remote=True)
    if reason is not None:
        raise ActivityFailed(f'rushhour_url "{url}" {reason}.')
    return url


def take_drill_pins() -> None:
    """The host names the drill's guard pinned (RUSHHOUR_PINNED_HOSTS), pinned in this process too."""
    try:
        load_pins()
    except ValueError as exc:
        raise ActivityFailed(str(exc)) from exc


def _pinned_host(url: str) -> bool:
    """True when `url` names a host pinned already: the guard checked its addresses, and a fresh
    look-up (which could answer otherwise) must not replace them."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return bool(host) and pinned(host) is not None


def _find_token(secrets: Mapping[str, Any] | None) -> str:
    """Chaos Toolkit nests secrets by scope (`{"rushhour": {"admin_token": ...}}`); accept both."""
    if not secrets:
        return ""
    if isinstance(secrets.get("admin_token"), str):
        return str(secrets["admin_token"])
    for scoped in secrets.values():
        if isinstance(scoped, Mapping) and isinstance(scoped.get("admin_token"), str):
            return str(scoped["admin_token"])
    return ""


def _describe_failure(method: str, target: str, response: httpx.Response) -> str:
    detail = response.text[:300]
    try:
        error = response.json().get("error", {})
        detail = f"{error.get('code', '')}: {error.get('message', '')}".strip(": ")
    except (ValueError, AttributeError):
        pass
    hint = {
        401: " Is RUSHHOUR_ADMIN_TOKEN the server's admin token?",
        404: " Check the node id or pool name.",
        422: " The server rejected the request body.",
    }.get(response.status_code, "")
    return f"{method} {target} answered {response.status_code} ({detail}).{hint}"


def _json_or_empty(response: httpx.Response) -> Any:
    if not response.content:
        return {}
    try:
        return response.json()
    except ValueError:
        return {"text": response.text}
