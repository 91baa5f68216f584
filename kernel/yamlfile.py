"""YAML as every rushhour file reads it: safe, and a key given twice in one mapping is an error.

PyYAML keeps the last of two equal keys in silence, so a scenario with two `slos:` sections, or
an SLO whose `threshold_ms` is written twice, would run with half of what its author wrote and
say nothing. Here the second key raises `yaml.constructor.ConstructorError`, a `yaml.YAMLError`
every caller already turns into a message naming the file; its text names the key and the lines
of both. Merge keys (`<<: *defaults`) still merge: the keys they bring in may be overridden,
as YAML intends. A document nested deeper than `MAX_DEPTH` levels raises `TooDeepError`, also a
`yaml.YAMLError`, before PyYAML's recursive composer could exhaust the stack.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError

__all__ = ["MAX_DEPTH", "DuplicateKeyError", "StrictLoader", "TooDeepError", "load_yaml", "yaml_problem"]

MAX_DEPTH = 64
"""The deepest nesting of mappings and lists a rushhour YAML file may have (scenarios use under ten)."""


class DuplicateKeyError(ConstructorError):
    """A key given twice in one mapping; `problem` names it and both lines."""


class TooDeepError(yaml.YAMLError):
    """A document nested deeper than MAX_DEPTH levels; its text names the line where it went too deep."""


class StrictLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping and nesting past MAX_DEPTH."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise TooDeepError(f"the document is nested more than {MAX_DEPTH} levels deep (at line {line}); "
                                   "no rushhour file needs that many")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)  # the merged keys now lead node.value, the node's own follow
            merged = getattr(node, "merged_keys", 0)
            seen: dict[Any, yaml.Node] = {}
            for key_node, _value in node.value[merged:]:
                key = self.construct_object(key_node, deep=True)
                try:
                    earlier = seen.get(key)
                except TypeError:  # an unhashable key: the base class explains it
                    break
                if earlier is not None:
                    raise DuplicateKeyError(
                        "while reading a mapping", node.start_mark,
                        f'the key "{key}" is given twice (line {earlier.start_mark.line + 1} and line '
                        f"{key_node.start_mark.line + 1}); keep one", key_node.start_mark)
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        merges = sum(1 for key, _ in node.value if key.tag == "tag:yaml.org,2002:merge")
        own = len(node.value) - merges
        super().flatten_mapping(node)
        if merges:
            node.merged_keys = len(node.value) - own  # type: ignore[attr-defined]


def load_yaml(text: str) -> Any:
    """`text` parsed as YAML with StrictLoader."""
    return yaml.load(text, Loader=StrictLoader)


def yaml_problem(exc: yaml.YAMLError) -> str:
    """What is wrong, in one line where PyYAML allows it: a duplicate key as its own sentence,
    anything else as PyYAML words it."""
    if isinstance(exc, DuplicateKeyError):
        return str(exc.problem)
    return str(exc)
