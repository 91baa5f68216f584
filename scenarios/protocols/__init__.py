"""Target protocols: how one schedule row becomes one request, and the answer becomes result columns.

- `base`: the `WireProtocol` interface, `WireRequest`, what a protocol can express.
- `rushhour`, `openai_chat`, `kserve_v2`, `http_template`: one module per protocol.
- `streaming`: server-sent events in, token arrival times and inter-token gaps out.
- `credentials`: the target's credential from an env variable or a file, and its masked form.
- `features`: at planning time, what the scenario asks that the protocol cannot say.
- `probe`: one real request before the load, so a wrong path or refused credential stops the run.
- `admission`: may the harness load this target, and can it serve what the scenario needs.
- `outcome`: what came back for one request, whatever the protocol.
- `pinning`: HTTP clients that connect only where the loopback guard looked.
- `tls`: TLS for https targets, verified always, against the scenario's CA bundle when it gives one.
"""

from __future__ import annotations

from rushhour.scenarios.protocols.base import WireProtocol, WireRequest, make_protocol

__all__ = ["WireProtocol", "WireRequest", "make_protocol"]
