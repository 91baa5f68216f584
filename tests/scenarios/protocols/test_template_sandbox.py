"""A body template that a scenario or a master sends cannot reach Python through the known Jinja2
sandbox escapes: the two that reach `str.format` by another road than a direct call (stored as a
value, CVE-2024-56326; through the `attr` filter, CVE-2025-27516) are refused as a direct call is,
and the installed distribution requires a Jinja2 that has both fixes."""

from __future__ import annotations

from importlib.metadata import requires

import pytest
from jinja2.exceptions import SecurityError
from packaging.requirements import Requirement

from rushhour.scenarios.protocols import make_protocol
from rushhour.scenarios.protocols.base import sample_fields

FIXED_IN = "3.1.6"
FIELDS = {**sample_fields(), "text": "Guten Tag"}
ESCAPES = {
    "direct": '{{ "{0.__class__.__mro__}".format(text) }}',
    "stored": '{% set f = "{0.__class__.__mro__}".format %}{{ f(text) }}',
    "attr filter": '{{ "{0.__class__.__mro__}"|attr("format")(text) }}',
}


@pytest.mark.parametrize("body", ESCAPES.values(), ids=ESCAPES.keys())
def test_a_template_reaching_str_format_is_refused_by_the_sandbox(body: str) -> None:
    protocol = make_protocol({"protocol": "http", "http": {"body": body}})
    with pytest.raises(SecurityError, match="__class__"):
        protocol.build(FIELDS)


def test_the_distribution_requires_a_jinja2_with_the_sandbox_fixes() -> None:
    jinja = next(Requirement(r) for r in requires("rushhour") or [] if Requirement(r).name.lower() == "jinja2")
    assert FIXED_IN in jinja.specifier and "3.1.5" not in jinja.specifier and "3.1.4" not in jinja.specifier
