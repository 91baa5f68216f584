"""One way to say what is wrong with a file a person wrote: `file: field.path: problem`.

Scenario files, traffic models, server configs and results folders all report pydantic's
findings through `format_validation_errors`, so every message has the same shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

__all__ = ["format_validation_errors", "field_path", "problem"]

Special = Callable[[dict[str, Any]], "str | None"]
_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
# The names pydantic gives the members of a union in an error's location: `str`, `float`,
# `list[tuple[...]]`, `function-after[_clock(), str]`, `constrained-float`; no person writes them.
_UNION_TAG = re.compile(r"^(?:str|int|float|bool|bytes|none|decimal|constrained-[a-z]+|[a-z][a-z-]*\[.*\])$")
_SHOULD = "input should be "


def format_validation_errors(source: str, exc: ValidationError, *, prefix: str = "",
                             special: Special | None = None, skip: frozenset[str] = frozenset()) -> str:
    """One line per problem, naming the file (`source`) and the field.

    `prefix` places the fields under the path the validated data sits at inside the file;
    `special` may word an error its own way (return None to fall back); `skip` names
    location parts that only pydantic sees (discriminator tags) and a person would not write.
    Where a value fits no member of a union, the members' errors become one line: the errors
    inside a member the value resembled (a list where a list may go), else the kinds it is not.
    """
    lines: dict[str, list[str]] = {}
    for error in _union_members_meant(exc.errors()):
        where = field_path(error["loc"], skip=skip)
        where = f"{prefix}.{where}" if prefix and where != "(top level)" else (prefix or where)
        said = (special and special(error)) or problem(error)
        lines.setdefault(where, [])
        if said not in lines[where]:
            lines[where].append(said)
    return "\n".join(f"{source}: {where}: {_either(said)}" for where, said in lines.items())


def field_path(loc: tuple[int | str, ...], *, skip: frozenset[str] = frozenset()) -> str:
    """`pools.quality.nodes`, `events[2].multiplier`: the path as the file's author reads it."""
    out = ""
    for index, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]" or (part in skip and index > 0 and isinstance(loc[index - 1], int)) or _is_tag(loc, index):
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
    if not message:
        return kind
    acronym = len(message) > 1 and message[1].isupper()
    return message if acronym else message[0].lower() + message[1:]


def _is_tag(loc: tuple[int | str, ...], index: int) -> bool:
    part = loc[index]
    return index > 0 and isinstance(part, str) and _UNION_TAG.match(part) is not None


def _union_members_meant(errors: list[Any]) -> list[Any]:
    """`errors` less the shallow type errors of a union whose other member has errors further in."""
    deep: set[tuple[int | str, ...]] = set()
    for error in errors:
        tag = _first_tag(error["loc"])
        if tag is not None and tag + 1 < len(error["loc"]):
            deep.add(tuple(error["loc"][:tag]))
    kept = []
    for error in errors:
        tag = _first_tag(error["loc"])
        shallow = tag is not None and tag + 1 == len(error["loc"])
        if not (shallow and tuple(error["loc"][:tag]) in deep):
            kept.append(error)
    return kept


def _first_tag(loc: tuple[int | str, ...]) -> int | None:
    return next((index for index in range(len(loc)) if _is_tag(loc, index)), None)


def _either(said: list[str]) -> str:
    """`input should be a valid string or a valid number`: one field's problems as one."""
    if len(said) > 1 and all(text.startswith(_SHOULD) for text in said):
        return _SHOULD + " or ".join(text.removeprefix(_SHOULD) for text in said)
    return "; or ".join(said)
