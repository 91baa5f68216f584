"""Keep pytest-xdist's groups (`--dist loadgroup`) working on pytest 9.2 and later.

pytest-xdist 3.8 tells its controller which group a test belongs to by appending "@group" to the
test's id on the worker, through an attribute (`_nodeid`) that pytest 9.2 no longer reads: every
`xdist_group` mark is then silently ignored and each test goes to any worker (make test's CPU
lanes and each module's one shared server with them). This hook appends the suffix to the id
pytest does read, unless xdist already did (pytest before 9.2, or an xdist that knows the new
ids), before the worker sends its ids to the controller.
"""

from __future__ import annotations

import pytest

try:
    from _pytest.nodeid import NodeId
except ImportError:  # pytest before 9.2: xdist's own suffix works there
    NodeId = None  # type: ignore[assignment,misc]

__all__ = ["group_suffix", "pytest_collection_finish"]


def group_suffix(item: pytest.Item) -> str:
    """"@a_b" for a test marked with the xdist groups a and b (as xdist spells it), else ""."""
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")})
    return "@" + "_".join(names) if names else ""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker sends the collected ids
def pytest_collection_finish(session: pytest.Session) -> None:
    if NodeId is None or not getattr(session.config.option, "loadgroup", False):
        return
    for item in session.items:
        suffix = group_suffix(item)
        if suffix and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
            item._id = NodeId.parse(item.nodeid + suffix)
