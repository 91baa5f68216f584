"""Plain Locust for the benchmark's baseline: closed loop, no schedule, no wait."""

from __future__ import annotations

from locust import FastHttpUser, task


class PlainUser(FastHttpUser):
    @task
    def translate(self) -> None:
        self.client.post("/v1/translate", json={"text": "hello", "source_lang": "en", "target_lang": "de"})
