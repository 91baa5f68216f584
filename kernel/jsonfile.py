"""JSON as every rushhour reader parses it: a document nested too deeply is a ValueError like any
other malformed JSON, never a RecursionError traceback.

Python's decoder recurses once per level and gives up near a thousand; a results folder, a trace
or an experiment file from elsewhere may hold ten thousand. Readers already turn a ValueError into
a message naming the file and line; here that covers the deep document too.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["TooDeepJSONError", "loads"]


class TooDeepJSONError(ValueError):
    """A JSON document nested deeper than the decoder can follow."""


def loads(text: str | bytes) -> Any:
    """`json.loads(text)`; TooDeepJSONError (a ValueError) for a document nested too deeply."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeepJSONError("it is nested too deeply (thousands of levels); no rushhour file is") from None
