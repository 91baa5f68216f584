"""Readers for published LLM production traces, each turned into the replay's common columns.

Every reader returns a frame with `timestamp` (seconds), `tokens` (prompt tokens) and
`max_tokens` (logged output tokens), plus `blocks` (the prompt's hash ids, space-separated) for
traces that name shared prompt blocks. The replay then treats all of them alike.

- mooncake (Kimi's FAST'25 traces): JSON lines of `timestamp` (ms), `input_length`,
  `output_length` and `hash_ids`, each id naming one 512-token block of the prompt.
- burstgpt (Azure OpenAI GPT usage, Wang et al. 2024): CSV of `Timestamp` (s), `Model`,
  `Request tokens`, `Response tokens`, `Total tokens`, `Log Type`.
- azure-llm (Azure LLM inference traces 2023 and 2024, code and conversation): CSV of
  `TIMESTAMP`, `ContextTokens`, `GeneratedTokens`, read by the replay itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from rushhour.kernel import jsonfile
from rushhour.traffic_models.errors import TrafficModelError

MOONCAKE_BLOCK_TOKENS = 512
"""Tokens per hash id in the Mooncake traces."""

LLM_FORMATS = frozenset({"azure-llm", "mooncake", "burstgpt"})
"""Formats whose prompts are sent as they are (the logged length), not wrapped as a task."""


def read_jsonl(path: Path) -> pd.DataFrame:
    """JSON lines as a frame, one object a line; a line that is not an object is named by its number."""
    try:
        return pd.read_json(path, lines=True)
    except (TypeError, ValueError) as exc:
        raise TrafficModelError(f"{path.name}: {_bad_line(path) or f'the log is not JSON lines ({exc})'}.") from exc


def _bad_line(path: Path) -> str | None:
    """The first line that is not a JSON object, in words (read again only once the fast reader failed)."""
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                value = jsonfile.loads(line)
            except json.JSONDecodeError as exc:
                return f"line {number} is not valid JSON ({exc.msg})"
            except ValueError as exc:
                return f"line {number} cannot be read: {exc}"
            if not isinstance(value, dict):
                shown = line.strip() if len(line.strip()) <= 60 else line.strip()[:57] + "..."
                return f'line {number} is {shown}, not a JSON object such as {{"timestamp": 12.5}}'
    return None


def read_mooncake(path: Path) -> pd.DataFrame:
    """Mooncake JSON lines as the common columns; `blocks` keeps each prompt's hash ids."""
    frame = read_jsonl(path)
    _require(frame, path, ("timestamp", "input_length", "output_length"))
    blocks = frame["hash_ids"] if "hash_ids" in frame else pd.Series([[]] * len(frame))
    return pd.DataFrame({
        "timestamp": _numbers(frame, path, "timestamp") / 1000.0,
        "tokens": _numbers(frame, path, "input_length"),
        "max_tokens": _numbers(frame, path, "output_length"),
        "blocks": [_block_text(ids, path) for ids in blocks],
    })


def read_burstgpt(path: Path) -> pd.DataFrame:
    """BurstGPT CSV as the common columns (failed requests, logged with 0 response tokens, keep 0)."""
    frame = pd.read_csv(path)
    _require(frame, path, ("Timestamp", "Request tokens", "Response tokens"))
    return pd.DataFrame({
        "timestamp": _numbers(frame, path, "Timestamp"),
        "tokens": _numbers(frame, path, "Request tokens"),
        "max_tokens": _numbers(frame, path, "Response tokens"),
    })


READERS: dict[str, Callable[[Path], pd.DataFrame]] = {"mooncake": read_mooncake, "burstgpt": read_burstgpt}


def _require(frame: pd.DataFrame, path: Path, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in frame]
    if frame.empty:
        raise TrafficModelError(f"{path.name}: the log has no rows.")
    if missing:
        raise TrafficModelError(f"{path.name}: the log has no {', '.join(missing)} column.")


def _numbers(frame: pd.DataFrame, path: Path, column: str) -> np.ndarray:
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    if not np.isfinite(values).all() or (values < 0).any():
        raise TrafficModelError(f"{path.name}: column {column} must hold non-negative numbers.")
    return values


def _block_text(ids: object, path: Path) -> str:
    """The hash ids as "3 17 42": a prompt's block list, kept as one string per request."""
    if not isinstance(ids, list) or not all(isinstance(i, int) and i >= 0 for i in ids):
        raise TrafficModelError(f"{path.name}: hash_ids must be lists of non-negative integers, got {ids!r}.")
    return " ".join(str(i) for i in ids)
