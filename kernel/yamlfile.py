"""YAML as every rushhour file reads it: safe, and a key given twice in one mapping is an error.

PyYAML keeps the last of two equal keys in silence, so a scenario with two `slos:` sections, or
an SLO whose `threshold_ms` is written twice, would run with half of what its author wrote and
say nothing. Here the second key raises `yaml.constructor.ConstructorError`, a `yaml.YAMLError`
every caller already turns into a message naming the file; its text names the key and the lines
of both. Merge keys (`<<: *defaults`) still merge: the keys they bring in may be overridden,
as YAML intends.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError

__all__ = ["DuplicateKeyError", "StrictLoader", "load_yaml", "yaml_problem"]


class DuplicateKeyError(ConstructorError):
    """A key given twice in one mapping; `problem` names it and both lines."""


class StrictLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping."""

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
