"""The saturation figure of `benchmarks.batching`: each request's characters spread over its time,
counted for the part inside the window."""

from __future__ import annotations

import pytest

from benchmarks.batchinglib import window_share

WINDOW = (10.0, 20.0)


@pytest.mark.parametrize(("sent", "done", "expected"), [
    (12.0, 14.0, 1000.0),  # inside: all of it
    (5.0, 15.0, 500.0),  # began before the window: the half inside
    (18.0, 22.0, 500.0),  # ended after it: the half inside
    (0.0, 30.0, 1000.0 / 3),  # spans it: a third
    (1.0, 9.0, 0.0),  # before
    (20.0, 25.0, 0.0),  # after
])
def test_batchinglib_share_counts_the_part_of_a_request_inside_the_window(sent: float, done: float, expected: float) -> None:
    assert window_share(1000, sent, done, WINDOW) == pytest.approx(expected)


def test_batchinglib_share_of_back_to_back_requests_adds_up_to_the_window_rate() -> None:
    # one client, 400-character requests taking 1.5 s each from t=0: 266.7 chars/s whatever the edges
    spans = [(1.5 * k, 1.5 * (k + 1)) for k in range(20)]
    total = sum(window_share(400, sent, done, WINDOW) for sent, done in spans)
    assert total / (WINDOW[1] - WINDOW[0]) == pytest.approx(400 / 1.5)


def test_batchinglib_share_of_a_failed_or_instant_request_is_zero() -> None:
    assert window_share(0, 12.0, 14.0, WINDOW) == 0.0
    assert window_share(1000, 12.0, 12.0, WINDOW) == 0.0
