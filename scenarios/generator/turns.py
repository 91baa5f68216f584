"""The prompts of trace rows and conversation turns, built just before they are sent.

A trace row's prompt is sent as it is (its logged length, its shared blocks); a conversation's
turn carries every turn before it and their answers as chat messages, so the prefix grows from
turn to turn as it does for a person chatting. The answers are the ones the service gave; where
none was read (a failed turn, a protocol that does not keep answers) a stand-in text of the
length the turn asked for takes its place.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

ANSWER_ID_SALT = 1 << 57
"""Text ids of stand-in answers: the turn's text id moved into a range of their own."""
CHARS_PER_ANSWER_TOKEN = 4

Message = dict[str, str]


@lru_cache(maxsize=4096)
def prompt_text(prompt: str, text_id: int, chars: int) -> str:
    """The row's text for a `prompt` value of the schedule ("raw", or shared blocks); the text
    generator is imported on first use, as the worker's own text function does."""
    from rushhour.traffic_models.text import prompt_text as build

    return build(prompt, text_id, chars)


def answer_text(text_id: int, max_tokens: int, chars: int, text_for: Callable[[int, int], str]) -> str:
    """The stand-in answer to a turn: as long as it asked for (its own length when it asked for none)."""
    size = max_tokens * CHARS_PER_ANSWER_TOKEN if max_tokens > 0 else chars
    return text_for(ANSWER_ID_SALT + text_id, max(1, size))


def check_conversation_size(turn_chars: list[int], answer_tokens: list[int]) -> None:
    """ValueError when a turn carrying its conversation so far would pass MAX_REQUEST_CHARS: the
    sizes come from a schedule (a trace, a master), and no text past the cap is ever built."""
    from rushhour.traffic_models.limits import MAX_REQUEST_CHARS

    total = sum(int(n) for n in turn_chars) + sum(
        int(t) * CHARS_PER_ANSWER_TOKEN if t > 0 else int(n) for t, n in zip(answer_tokens, turn_chars))
    if total > MAX_REQUEST_CHARS:
        raise ValueError(f"turn {len(turn_chars)} of its conversation would carry {total:,} characters with the turns "
                         f"before it, past the {MAX_REQUEST_CHARS:,} one request carries.")


def conversation(turn_texts: list[str], answers: list[str]) -> list[Message]:
    """Chat messages of a turn: each earlier turn and its answer, then the turn itself."""
    messages: list[Message] = []
    for question, answer in zip(turn_texts[:-1], answers):
        messages += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    return [*messages, {"role": "user", "content": turn_texts[-1]}]


def sessions_of(session: list[int], turn: list[int]) -> dict[int, list[int]]:
    """Share indices of every session's turns, in turn order."""
    out: dict[int, list[int]] = {}
    for i in sorted(range(len(session)), key=lambda k: (session[k], turn[k])):
        if session[i] >= 0:
            out.setdefault(session[i], []).append(i)
    return out
