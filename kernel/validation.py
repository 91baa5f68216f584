"""One way to say what is wrong with a file a person wrote: `file: field.path: problem`.

Scenario files, traffic models, server configs and results folders all report pydantic's
findings through `format_validation_errors`, so every message has the same shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

__all__ = ["format_validation_errors", "field_path", "problem"]

Special = Callable[[dict[str, Any]], "str | None"]
_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}


def format_validation_errors(source: str, exc: ValidationError, *, prefix: str = "",
                             special: Special | None = None, skip: frozenset[str] = frozenset()) -> str:
    """One line per problem, naming the file (`source`) and the field.

    `prefix` places the fields under the path the validated data sits at inside the file;
    `special` may word an error its own way (return None to fall back); `skip` names
    location parts that only pydantic sees (union tags) and a person would not write.
    """
    lines = []
    for error in exc.errors():
        where = field_path(error["loc"], skip=skip)
        where = f"{prefix}.{where}" if prefix and where != "(top level)" else (prefix or where)
        lines.append(f"{source}: {where}: {(special and special(error)) or problem(error)}")  # type: ignore[arg-type]
    return "\n".join(lines)


def field_path(loc: tuple[int | str, ...], *, skip: frozenset[str] = frozenset()) -> str:
    """`pools.quality.nodes`, `events[2].multiplier`: the path as the file's author reads it."""
    out = ""
    for index, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]" or (part in skip and index > 0 and isinstance(loc[index - 1], int)):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def problem(error: dict[str, Any]) -> str:
    """The problem in words, with the value that was given where that helps."""
    kind = error["type"]
    if kind in _BOUNDS:
        limit = next(iter((error.get("ctx") or {}).values()))
        return f"must be {_BOUNDS[kind]} {limit} (got {error['input']!r})"
    if kind == "extra_forbidden":
        return "is not a known field"
    if kind == "missing":
        return "is required"
    message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return message[0].lower() + message[1:] if message else kind
