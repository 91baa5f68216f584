"""The public API's error mapping: malformed JSON, bad bodies, invalid fields, Retry-After.

Driven in process through httpx's ASGI transport: `starlette.testclient` warns that its httpx
backend is deprecated, and warnings are errors in this suite.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError

from rushhour.reference_server.gateway.api import ApiError, TranslateRequest, handle_api_error, handle_validation_error

VALID = {"text": "Hello", "source_lang": "en", "target_lang": "de"}


def _app() -> FastAPI:
    app = FastAPI()
    app.add_exception_handler(RequestValidationError, handle_validation_error)
    app.add_exception_handler(ApiError, handle_api_error)

    @app.post("/v1/translate")
    async def translate(req: TranslateRequest) -> dict[str, str]:
        return {"mode": req.mode, "text": req.text}

    @app.get("/fail")
    async def fail(retry: float | None = None, status: int = 503) -> None:
        raise ApiError(status, "overloaded", "Too busy.", retry_after_s=retry, estimated_wait_ms=12.5)

    return app


class Client:
    """A small synchronous face over an in-process ASGI client."""

    def __init__(self, app: FastAPI) -> None:
        self._app = app

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self._app)
            async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
                return await client.request(method, url, **kwargs)

        return asyncio.run(send())

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)


@pytest.fixture(scope="module")
def client() -> Client:
    return Client(_app())


def test_api_errors_accept_a_valid_request(client: Client) -> None:
    response = client.post("/v1/translate", json=VALID)
    assert response.status_code == 200
    assert response.json() == {"mode": "auto", "text": "Hello"}


def test_api_errors_malformed_json_is_400(client: Client) -> None:
    response = client.post("/v1/translate", content=b'{"text": "Hello",', headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_json"


def test_api_errors_json_array_body_is_400(client: Client) -> None:
    response = client.post("/v1/translate", json=[VALID])
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_body"


def test_api_errors_missing_field_is_422_naming_it(client: Client) -> None:
    response = client.post("/v1/translate", json={"text": "Hello", "source_lang": "en"})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_field"
    assert 'field "target_lang"' in error["message"]


def test_api_errors_unknown_mode_is_422_naming_the_field(client: Client) -> None:
    response = client.post("/v1/translate", json={**VALID, "mode": "turbo"})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_field"
    assert 'field "mode"' in error["message"]


def test_api_errors_unknown_field_is_422(client: Client) -> None:
    response = client.post("/v1/translate", json={**VALID, "colour": "blue"})
    assert response.status_code == 422
    assert 'field "colour"' in response.json()["error"]["message"]


def test_api_errors_name_several_bad_fields(client: Client) -> None:
    response = client.post("/v1/translate", json={"text": "", "source_lang": "en", "target_lang": "de", "deadline_ms": -1})
    assert response.status_code == 422
    message = response.json()["error"]["message"]
    assert 'field "text"' in message and 'field "deadline_ms"' in message


@pytest.mark.parametrize(("retry", "header"), [(0.2, "1"), (1.0, "1"), (1.5, "2"), (29.9, "30"), (0.0, "1")])
def test_api_errors_retry_after_is_whole_seconds_at_least_one(client: Client, retry: float, header: str) -> None:
    response = client.get("/fail", params={"retry": retry})
    assert response.status_code == 503
    assert response.headers["retry-after"] == header


def test_api_errors_api_error_body_carries_code_message_and_extras(client: Client) -> None:
    response = client.get("/fail", params={"status": 429})
    assert response.status_code == 429
    assert "retry-after" not in response.headers
    assert response.json() == {"error": {"code": "overloaded", "message": "Too busy.", "estimated_wait_ms": 12.5}}
