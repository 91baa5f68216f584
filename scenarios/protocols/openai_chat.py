"""OpenAI chat completions (`POST /v1/chat/completions`): vLLM, TGI, llama.cpp, Triton's frontend.

The row's text becomes one user message asking for a translation, `max_tokens` comes from the
schedule; a trace's prompt and a conversation's turn (the row's `messages`) are sent as they are.
Streaming (the default) asks for server-sent events with usage in the last event, so time to
first token, inter-token gaps and output tokens are measured; without streaming only the
output tokens (`usage.completion_tokens`) are. The tenant goes in OpenAI's own `user` field.
Priority, mode and deadline have no field in this API: a gateway that reads them from a header
or an extra body field gets them through `target.row_headers` / `target.extra_fields` (the
embedded reference server gets both by default).
"""

from __future__ import annotations

from collections.abc import Mapping

from rushhour.scenarios.protocols.base import StreamParser, WireProtocol, WireRequest, json_body
from rushhour.scenarios.protocols.outcome import Outcome, TokenTiming
from rushhour.scenarios.protocols.streaming import SseParser

CHAT_PATH = "/v1/chat/completions"
DEFAULT_MODEL = "default"


class OpenAIChatProtocol(WireProtocol):
    """One chat completion per schedule row."""

    name = "openai-chat"
    sends = frozenset({"text", "source_lang", "target_lang", "max_tokens", "tenant"})

    @property
    def streaming(self) -> bool:
        return self.spec.stream

    def build(self, fields: Mapping[str, object]) -> WireRequest:
        prompt = f"Translate from {fields.get('source_lang', 'en')} to {fields.get('target_lang', 'de')}:\n{fields['text']}"
        body: dict[str, object] = {
            "model": self.spec.model or DEFAULT_MODEL,
            "messages": fields.get("messages") or [{"role": "user", "content": prompt}],
            "max_tokens": self.max_tokens(fields), "stream": self.streaming, **self.extras(fields),
        }
        if self.spec.ignore_eos:
            body["ignore_eos"] = True
        if fields.get("tenant"):
            body["user"] = str(fields["tenant"])
        if self.streaming:
            body["stream_options"] = {"include_usage": True}
        return self.json_request("POST", CHAT_PATH, body, stream=self.streaming)

    def parse(self, status: int, body: bytes | None, error: str = "") -> Outcome:
        data = json_body(body)
        data = data if isinstance(data, dict) else {}
        if not 200 <= status < 300 or not status:
            return Outcome(status=status, error=error_code(data) or error or f"http {status}")
        if not isinstance(data.get("choices"), list):
            return Outcome(status=STATUS_BAD_ANSWER, error="answer is not a chat completion (no choices)")
        usage = data.get("usage")
        tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        return Outcome(status=status, model=str(data.get("model") or ""), text=answer_text(data),
                       tokens=TokenTiming(output_tokens=int(tokens) if isinstance(tokens, int) else None,
                                          input_tokens=prompt_tokens(data)))

    def stream_parser(self) -> StreamParser:
        return SseParser(read_chunk_event, ends=chunk_finishes, read_text=chunk_text, read_input_tokens=prompt_tokens)


STATUS_BAD_ANSWER = 502
"""An answer with a success status that is not what the protocol promises counts as a failure."""


def read_chunk_event(event: dict[str, object]) -> tuple[int, str, str, int | None]:
    """One `chat.completion.chunk`: does it carry text, which model, an error, the usage."""
    usage = event.get("usage")
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    choices = event.get("choices")
    text = ""
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        delta = choices[0].get("delta") or {}
        if isinstance(delta, dict):
            text = str(delta.get("content") or delta.get("reasoning_content") or "")
        text = text or str(choices[0].get("text") or "")
    return (1 if text else 0, str(event.get("model") or ""), error_code(event),
            int(tokens) if isinstance(tokens, int) else None)


def prompt_tokens(data: dict[str, object]) -> int | None:
    """The prompt's token count from an answer's or a chunk's `usage`, None when it carries none."""
    usage = data.get("usage")
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return tokens if isinstance(tokens, int) else None


def chunk_text(event: dict[str, object]) -> str:
    """The answer text a chunk adds (its first choice's delta content)."""
    choices = event.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        delta = choices[0].get("delta")
        return str(delta.get("content") or "") if isinstance(delta, dict) else str(choices[0].get("text") or "")
    return ""


def answer_text(data: dict[str, object]) -> str:
    """The text of a whole chat completion (its first choice's message)."""
    choices = data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        return str(message.get("content") or "") if isinstance(message, dict) else ""
    return ""


def chunk_finishes(event: dict[str, object]) -> bool:
    """Whether a chunk closes the answer: a choice with a `finish_reason` ("stop", "length", ...)."""
    choices = event.get("choices")
    return isinstance(choices, list) and any(isinstance(c, dict) and c.get("finish_reason") for c in choices)


def error_code(data: dict[str, object]) -> str:
    """The error's code (or type, or message) from an OpenAI-style error body, "" when none."""
    detail = data.get("error")
    if isinstance(detail, dict):
        return str(detail.get("code") or detail.get("type") or detail.get("message") or "error")
    if isinstance(detail, str):
        return detail
    return ""
