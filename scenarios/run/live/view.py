"""The terminal live view: what a room watching one screen needs, redrawn every second.

Rate offered vs achieved vs shed, P99 against the SLO per priority, errors, SLO budgets and burn
rates, the faults held now, the lines of `events.jsonl` refused (when any), the phase and the
time left. Drawn in place on a terminal only; in CI logs (not a TTY) the drill keeps its
one-line progress every 10 s. It has the progress
printer's interface (`show`, `close`), so the drill swaps one for the other.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable
from typing import TextIO

from rushhour.scenarios.run.live.state import LiveState

REFRESH_S = 1.0
WINDOW_S = 10.0
BAR_WIDTH = 24
_RED, _GREEN, _BOLD, _RESET = "\x1b[31m", "\x1b[32m", "\x1b[1m", "\x1b[0m"


def _ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:,.0f} ms"


def _bar(done: float, total: float) -> str:
    filled = int(BAR_WIDTH * min(1.0, done / total)) if total > 0 else 0
    return "[" + "#" * filled + "." * (BAR_WIDTH - filled) + "]"


def priority_thresholds(state: LiveState) -> dict[str, float]:
    """Per priority, the tightest latency SLO threshold (ms) that covers it."""
    out: dict[str, float] = {}
    for tally in state.slos.tallies:
        if tally.threshold_s is None or tally.spec.kind != "latency":
            continue
        for priority in state.fold.priorities:
            if tally.spec.priority in (None, priority):
                out[priority] = min(out.get(priority, math.inf), tally.threshold_s * 1000.0)
    return out


def render_view(state: LiveState, *, color: bool = False) -> list[str]:
    """The view's lines for the state now (no cursor movement; the caller places them)."""
    paint: Callable[[str, str], str] = (lambda code, text: f"{code}{text}{_RESET}") if color else (lambda _code, text: text)
    with state.lock:
        now, total = state.elapsed(), state.plan.duration_s
        recent = state.fold.recent(now, WINDOW_S)
        offered = state.fold.offered_between(now - WINDOW_S, now) / WINDOW_S
        lines = [
            paint(_BOLD, f"rushhour drill {state.plan.scenario.name}") + f"  phase {state.phase() or '-'}  "
            f"{min(now, total):.0f} / {total:.0f} s ({max(0.0, total - now):.0f} s left) {_bar(now, total)}",
            (f"load (last {WINDOW_S:g} s)  offered {offered:.1f}/s  achieved {(recent.done - recent.failed) / WINDOW_S:.1f}/s  "
             f"shed {recent.shed / WINDOW_S:.1f}/s  errors {recent.failed / max(1, recent.done):.1%}"),
            (f"generator  lag P99 {_ms(state.fold.lag_p99_ms())}  cpu {state.cpu_ratio:.0%}   "
             f"total {state.fold.total('completed')}/{state.fold.count} answered, {state.fold.total('failed')} failed"),
            f"{'priority':<12}{'done':>8}  {'P99':>10}  {'SLO':>12}        {'errors':>7}",
        ]
        limits = priority_thresholds(state)
        for priority, (done, p99, errors) in recent.by_priority.items():
            limit = limits.get(priority)
            verdict = "" if limit is None or math.isnan(p99) else (
                paint(_GREEN, "ok  ") if p99 <= limit else paint(_RED, "MISS"))
            slo = f"<= {limit:,.0f} ms" if limit is not None else "-"
            lines.append(f"{priority:<12}{done:>8}  {_ms(p99):>10}  {slo:>12}  {verdict:<4}  {errors:>7.1%}")
        lines += _slo_lines(state, now) + [_fault_line(state, now, paint), *_refused_line(state, paint)]
    return lines


def _slo_lines(state: LiveState, now: float) -> list[str]:
    labels = [label for label, _ in state.slos.windows[:2]]
    lines = [f"{'SLO':<16}{'good':>8}{'bad':>7}{'budget':>9}   burn {' / '.join(reversed(labels))}"]
    for tally in state.slos.tallies:
        seen = tally.good + tally.bad
        budget = tally.bad / (seen * tally.spec.allowed_bad_share) if seen else 0.0
        burns = [tally.burn_rate(now, seconds) for _, seconds in reversed(state.slos.windows[:2])]
        lines.append(f"{tally.spec.name[:15]:<16}{tally.good:>8}{tally.bad:>7}{budget:>9.0%}   "
                     + " / ".join(f"{b:.1f}x" for b in burns))
    return lines


def _fault_line(state: LiveState, now: float, paint: Callable[[str, str], str]) -> str:
    if not state.faults:
        return "faults   none planned"
    held = [paint(_RED, f"{name} HELD {now - since:.0f} s") for name, since in state.faults.items()
            if since is not None]
    return "faults   " + (", ".join(held) if held else "none held now")


def _refused_line(state: LiveState, paint: Callable[[str, str], str]) -> list[str]:
    """One line when events.jsonl holds lines the event models refused: how many, and the last one's number."""
    refused = state.refused_events
    if not refused:
        return []
    return [paint(_RED, f"events   {len(refused)} line(s) of events.jsonl refused, left out")
            + f" (last: line {refused[-1].line})"]


class LiveView:
    """Redraws the view in place at most once per `REFRESH_S`; the progress line is ignored."""

    def __init__(self, state: LiveState, stream: TextIO) -> None:
        self._state = state
        self._stream = stream
        self._drawn = 0
        self._last = -math.inf

    def show(self, _line: str, _elapsed_s: float) -> None:
        if time.monotonic() - self._last < REFRESH_S:
            return
        self._last = time.monotonic()
        width = shutil.get_terminal_size((120, 24)).columns
        lines = [line if "\x1b" in line else line[:width] for line in render_view(self._state, color=True)]
        up = f"\x1b[{self._drawn}F" if self._drawn else ""
        self._stream.write(up + "\x1b[J" + "\n".join(lines) + "\n")
        self._stream.flush()
        self._drawn = len(lines)

    def close(self) -> None:
        self._last = -math.inf
        self.show("", 0.0)
