"""CircuitBreaker: trip on failure or slow-call rate, open, half-open probes, close or reopen."""

from __future__ import annotations

from rushhour.reference_server.config import BreakerConfig
from rushhour.reference_server.gateway.breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker


class FakeClock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


CONFIG = BreakerConfig(
    window=10, min_calls=4, failure_rate=0.5, slow_call_ms=100, slow_call_rate=0.5, open_s=2.0, half_open_probes=2
)
FAST = 0.01
SLOW = 0.2


def _breaker(config: BreakerConfig = CONFIG) -> tuple[CircuitBreaker, FakeClock, list[str]]:
    clock = FakeClock()
    changes: list[str] = []
    return CircuitBreaker(config, on_change=changes.append, clock=clock), clock, changes


def _open(breaker: CircuitBreaker) -> None:
    for _ in range(CONFIG.min_calls):
        breaker.record(ok=False, duration_s=FAST)
    assert breaker.state == OPEN


def test_breaker_stays_closed_below_min_calls() -> None:
    breaker, _, changes = _breaker()
    for _ in range(CONFIG.min_calls - 1):
        breaker.record(ok=False, duration_s=FAST)
    assert breaker.state == CLOSED
    assert breaker.acquire()
    assert changes == []


def test_breaker_opens_at_the_failure_rate() -> None:
    breaker, _, changes = _breaker()
    for ok in (True, True, False):
        breaker.record(ok=ok, duration_s=FAST)
    assert breaker.state == CLOSED
    breaker.record(ok=False, duration_s=FAST)  # 2 of 4 failed = 0.5
    assert breaker.state == OPEN
    assert changes == [OPEN]


def test_breaker_stays_closed_under_the_failure_rate() -> None:
    breaker, _, changes = _breaker()
    for ok in (True, True, True, False, True, True, False):
        breaker.record(ok=ok, duration_s=FAST)
    assert breaker.state == CLOSED
    assert changes == []


def test_breaker_opens_on_the_slow_call_rate() -> None:
    breaker, _, changes = _breaker()
    for duration in (FAST, FAST, SLOW, SLOW):
        breaker.record(ok=True, duration_s=duration)
    assert breaker.state == OPEN
    assert changes == [OPEN]


def test_breaker_window_slides_old_calls_out() -> None:
    config = CONFIG.model_copy(update={"window": 4, "failure_rate": 0.75})
    breaker, _, _ = _breaker(config)
    for ok in (False, False, True, True, True, True, True):
        breaker.record(ok=ok, duration_s=FAST)
    # The two early failures have slid out; two new ones make 2 of 4, under 0.75.
    breaker.record(ok=False, duration_s=FAST)
    breaker.record(ok=False, duration_s=FAST)
    assert breaker.state == CLOSED
    breaker.record(ok=False, duration_s=FAST)  # 3 of the last 4
    assert breaker.state == OPEN


def test_breaker_open_refuses_calls_until_open_s_has_passed() -> None:
    breaker, clock, _ = _breaker()
    _open(breaker)
    assert not breaker.available()
    assert not breaker.acquire()
    clock.now += CONFIG.open_s - 0.01
    assert breaker.state == OPEN
    assert not breaker.acquire()


def test_breaker_half_open_lets_a_limited_number_of_probes_through() -> None:
    breaker, clock, changes = _breaker()
    _open(breaker)
    clock.now += CONFIG.open_s
    assert breaker.state == HALF_OPEN
    assert breaker.available()
    assert [breaker.acquire() for _ in range(CONFIG.half_open_probes + 1)] == [True, True, False]
    assert not breaker.available()
    assert changes == [OPEN, HALF_OPEN]


def test_breaker_closes_after_every_probe_succeeds() -> None:
    breaker, clock, changes = _breaker()
    _open(breaker)
    clock.now += CONFIG.open_s
    assert breaker.acquire() and breaker.acquire()
    breaker.record(ok=True, duration_s=FAST)
    assert breaker.state == HALF_OPEN
    breaker.record(ok=True, duration_s=FAST)
    assert breaker.state == CLOSED
    assert changes == [OPEN, HALF_OPEN, CLOSED]
    # The window was cleared: one new failure is below min_calls again.
    breaker.record(ok=False, duration_s=FAST)
    assert breaker.state == CLOSED


def test_breaker_reopens_on_a_failed_probe() -> None:
    breaker, clock, changes = _breaker()
    _open(breaker)
    clock.now += CONFIG.open_s
    assert breaker.acquire()
    breaker.record(ok=False, duration_s=FAST)
    assert breaker.state == OPEN
    assert changes == [OPEN, HALF_OPEN, OPEN]
    clock.now += CONFIG.open_s - 0.01  # the open period restarted at the failed probe
    assert breaker.state == OPEN
    clock.now += 0.01
    assert breaker.state == HALF_OPEN
    assert breaker.acquire() and breaker.acquire()  # probe slots are fresh


def test_breaker_counts_a_slow_probe_as_failed() -> None:
    breaker, clock, _ = _breaker()
    _open(breaker)
    clock.now += CONFIG.open_s
    assert breaker.acquire()
    breaker.record(ok=True, duration_s=SLOW)
    assert breaker.state == OPEN


def test_breaker_ignores_results_recorded_while_open() -> None:
    breaker, clock, changes = _breaker()
    _open(breaker)
    for _ in range(10):
        breaker.record(ok=True, duration_s=FAST)
    assert breaker.state == OPEN
    assert changes == [OPEN]


def test_breaker_reset_closes_and_notifies() -> None:
    breaker, _, changes = _breaker()
    _open(breaker)
    breaker.reset()
    assert breaker.state == CLOSED
    assert changes == [OPEN, CLOSED]
    breaker.reset()  # already closed: no transition to report
    assert changes == [OPEN, CLOSED]


def test_breaker_does_not_count_a_stale_call_as_a_probe() -> None:
    config = CONFIG.model_copy(update={"half_open_probes": 1, "slow_call_ms": 5000})
    breaker, clock, _ = _breaker(config)
    assert breaker.acquire()  # a long call starts while closed
    _open(breaker)
    clock.now += config.open_s
    assert breaker.state == HALF_OPEN
    breaker.record(ok=True, duration_s=config.open_s + 0.5)  # ...and ends now: it probed nothing after the outage
    assert breaker.state == HALF_OPEN


def test_breaker_calls_cut_by_their_deadline_count_as_slow() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(BreakerConfig(window=4, min_calls=4, failure_rate=0.9, slow_call_rate=0.5, slow_call_ms=5000), clock=clock)
    breaker.record(ok=True, duration_s=0.01, slow=True)
    breaker.record(ok=True, duration_s=0.01)
    breaker.record(ok=True, duration_s=0.01, slow=True)
    assert breaker.state == "closed"
    breaker.record(ok=True, duration_s=0.01)
    assert breaker.state == "open"  # 2 of 4 slow: the slow-call rate, not the failure rate
