"""A real KServe ModelServer for rushhour's own-service tests: `python kserve_app.py HTTP_PORT [GRPC_PORT]`.

Why it exists: rushhour's `kserve-v2` and `openai-chat` protocols are otherwise tested only against
stubs written by the same hands; this serves them from KServe's own Python ModelServer (kserve
0.21.0, the same server code KServe runs in a cluster), so a mismatch with what KServe really
accepts and answers shows up. It runs in its own virtualenv (`.venv/kserve`, built by `make test`:
kserve needs pandas<3 and protobuf<7), so it imports nothing from rushhour, only the standard
library and kserve.

It serves two models:
- "mt" (v2 inference, `POST /v2/models/mt/infer`): the BYTES input text, reversed, as a BYTES output.
- "chat" (OpenAI, `POST /openai/v1/chat/completions`): a stream at known times, so a test can
  check the measured latencies: the first token 200 ms after the request arrived, then one token
  every 20 ms, `max_tokens` tokens in all, each write scheduled against the arrival time (no
  drift), and a final usage chunk when `stream_options.include_usage` asks for it; without
  streaming, one answer with usage once the last token would have been written. KServe's OpenAI
  endpoints import vLLM (`kserve[llm]`); where it is not installed, "chat" is left out and a line
  on stderr says so (GET /openai/v1/models then answers 404).

The HTTP server listens on 127.0.0.1 only (kserve itself binds 0.0.0.0, so its REST server class
is narrowed here). gRPC is off unless GRPC_PORT is given and not 0; kserve binds gRPC on all
interfaces ([::]) and offers no way to change that.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import kserve
import kserve.model_server
from kserve.protocol.infer_type import InferInput, InferOutput, InferRequest, InferResponse
from kserve.protocol.rest.server import RESTServer

HOST = "127.0.0.1"
FIRST_TOKEN_S = 0.200
TOKEN_EVERY_S = 0.020
DEFAULT_TOKENS = 16
GRACE_S = 2


class LoopbackRESTServer(RESTServer):
    """KServe's REST server, listening on the loopback address instead of 0.0.0.0."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config.host = HOST  # uvicorn reads it when it binds, in serve()


class ReverseModel(kserve.Model):
    """v2 model "mt": answers the text of its BYTES input reversed, as a BYTES output "text"."""

    def load(self) -> bool:
        self.ready = True
        return self.ready

    async def predict(self, payload: InferRequest, headers: dict[str, str] | None = None,
                      response_headers: dict[str, str] | None = None) -> InferResponse:
        texts = [_text(item)[::-1] for item in _elements(payload.inputs[0])]
        output = InferOutput(name="text", shape=[len(texts)], datatype="BYTES", data=texts)
        return InferResponse(response_id=payload.id or str(uuid.uuid4()), model_name=self.name,
                             infer_outputs=[output])


def _elements(tensor: InferInput) -> list[object]:
    """The tensor's elements, flattened (JSON may nest them by shape)."""
    data = tensor.data if isinstance(tensor.data, list) else [tensor.data]
    flat: list[object] = []
    for item in data:
        flat.extend(item if isinstance(item, list) else [item])
    return flat


def _text(item: object) -> str:
    return item.decode("utf-8") if isinstance(item, bytes) else str(item)


async def sleep_until(deadline: float) -> None:
    """Sleep until monotonic time `deadline` (no-op if it has passed), so delays never add up."""
    delay = deadline - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)


def token_due(arrived: float, index: int) -> float:
    """When token `index` (from 0) is due: the first 200 ms after arrival, then one every 20 ms."""
    return arrived + FIRST_TOKEN_S + index * TOKEN_EVERY_S


def chat_model(name: str) -> kserve.Model | None:
    """The OpenAI chat model, or None (with a line on stderr) when kserve's OpenAI API cannot load."""
    try:
        from kserve.protocol.rest.openai import OpenAIGenerativeModel
        from kserve.protocol.rest.openai.errors import create_error_response
        from kserve.protocol.rest.openai.types import (
            ChatCompletion,
            ChatCompletionChoice,
            ChatCompletionChunk,
            ChatMessage,
            ChoiceDelta,
            ChunkChoice,
            UsageInfo,
        )
    except ImportError as exc:
        print(f"kserve_app: the OpenAI chat model is not served, because kserve's OpenAI API could not be "
              f"imported ({exc}); it needs kserve[llm].", file=sys.stderr, flush=True)
        return None

    class TimedChatModel(OpenAIGenerativeModel):
        """OpenAI chat model whose tokens come at known times (see the module docstring)."""

        async def create_completion(self, request: Any, raw_request: Any = None, context: Any = None) -> Any:
            return create_error_response(message="This test model serves chat completions only.")

        async def create_chat_completion(self, request: Any, raw_request: Any = None, context: Any = None) -> Any:
            arrived = time.monotonic()
            tokens = request.max_completion_tokens or request.max_tokens or DEFAULT_TOKENS
            prompt = prompt_tokens(request.messages)
            usage = UsageInfo(prompt_tokens=prompt, completion_tokens=tokens, total_tokens=prompt + tokens)
            if request.stream:
                options = request.stream_options
                return self.stream(request.model, arrived, tokens, usage if options and options.include_usage else None)
            await sleep_until(token_due(arrived, tokens - 1))
            message = ChatMessage(role="assistant", content="".join(word(k) for k in range(tokens)))
            choice = ChatCompletionChoice(index=0, message=message, finish_reason="length")
            return ChatCompletion(id=f"chatcmpl-{uuid.uuid4().hex}", created=int(time.time()), model=request.model,
                                  choices=[choice], usage=usage)

        async def stream(self, model: str, arrived: float, tokens: int, usage: Any) -> AsyncIterator[str]:
            """SSE events: one per token at its due time, the finish, the usage (when asked), [DONE]."""
            ident, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())

            def event(choices: list[Any], usage: Any = None) -> str:
                chunk = ChatCompletionChunk(id=ident, created=created, model=model, choices=choices, usage=usage)
                return f"data: {chunk.model_dump_json(exclude_none=True)}\n\n"

            for index in range(tokens):
                await sleep_until(token_due(arrived, index))
                role = {"role": "assistant"} if index == 0 else {}
                yield event([ChunkChoice(index=0, delta=ChoiceDelta(content=word(index), **role))])
            yield event([ChunkChoice(index=0, delta=ChoiceDelta(), finish_reason="length")])
            if usage is not None:
                yield event([], usage)
            yield "data: [DONE]\n\n"

    return TimedChatModel(name)


def prompt_tokens(messages: list[Any]) -> int:
    """A rough prompt size: the words in the messages' text."""
    count = 0
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else getattr(message, "content", "")
        count += len(str(content or "").split())
    return count


def word(index: int) -> str:
    """The text of token `index`."""
    return f"w{index} "


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or not all(arg.isdigit() for arg in argv[1:]):
        print("usage: kserve_app.py HTTP_PORT [GRPC_PORT]  (GRPC_PORT 0 or absent: no gRPC)", file=sys.stderr)
        return 2
    http_port, grpc_port = int(argv[1]), int(argv[2]) if len(argv) == 3 else 0
    kserve.model_server.RESTServer = LoopbackRESTServer  # ModelServer.start() looks it up here
    mt = ReverseModel("mt")
    mt.load()
    models = [mt] + [m for m in [chat_model("chat")] if m is not None]
    server = kserve.ModelServer(http_port=http_port, grpc_port=grpc_port or 8081, enable_grpc=grpc_port > 0,
                                grace_period=GRACE_S, enable_latency_logging=False)
    server.start(models)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
