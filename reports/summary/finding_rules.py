"""The rules behind the findings, one function per question a retro asks (see rushhour.reports.summary.findings).

Each rule returns Finding objects; a rule with nothing to say returns none. Numbers come from
the summary where it has them, so a finding and the table it links to always agree.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np
from pydantic import ConfigDict

from rushhour.kernel.clock import parse_duration
from rushhour.reports.measures.faults import SHED_STATUSES
from rushhour.reports.measures.pools import healthy_nodes, pool_low
from rushhour.reports.render.format import budget, ms, pct, secs, usd, window_text
from rushhour.reports.rundata.results import RunData
from rushhour.reports.schema import LATENCY_KINDS

SHED_ONSET_SHARE = 0.01
SHED_ONSET_MIN = 2
SERVICE_LIMIT_SHARE = 0.95
MIN_PHASE_REQUESTS = 20


@dataclass(frozen=True)
class Finding:
    """One statement: what (text), how bad (severity), when, and the anchor that shows it;
    summary.json's `findings` rows are validated against these fields (a misspelt key is refused)."""

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    rule: str
    severity: str
    text: str
    anchor: str
    link: str
    start_s: float | None = None
    end_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def slo_findings(summary: dict[str, Any]) -> list[Finding]:
    """Each missed SLO at its worst phase: measured against objective, budget burned there."""
    missed = sorted((s for s in summary["slos"] if not s["met"]),
                    key=lambda s: -(s.get("budget_consumed") or 0.0))
    return [_slo_finding(slo) for slo in missed]


def _slo_finding(slo: dict[str, Any]) -> Finding:
    failing = [p for p in slo.get("phases", []) if not p["met"] and p.get("budget_consumed") is not None]
    worst = max(failing, key=lambda p: p["budget_consumed"]) if failing else None
    scope = slo if worst is None else worst
    where = "" if worst is None else f" in {worst['phase']}" + (
        f" ({window_text(worst['start_s'], worst['end_s'])})" if worst.get("start_s") is not None else "")
    text = f"{slo['name']} missed{where}: {_slo_measure(slo, scope)}, {budget(scope['budget_consumed'])} of its error budget"
    if worst is not None:
        text += f" (whole run: {_slo_value(slo)}, {budget(slo['budget_consumed'])} of budget)"
    page = next((r for r in slo.get("burn_rates", []) if r["pages"]), None)
    if page is not None:
        text += f"; a {page['threshold']:g}x burn-rate alert would have paged at {secs(page['first_page_s'])} s"
    anchor, link = ("#slo-phases", "per-phase SLOs") if worst is not None else ("#slos", "SLO table")
    return Finding("slo", "bad", text + ".", anchor, link,
                   worst.get("start_s") if worst else None, worst.get("end_s") if worst else None)


def _slo_measure(slo: dict[str, Any], scope: dict[str, Any]) -> str:
    if slo["kind"] == "goodput":
        rps = scope.get("measured")
        return f"goodput {'—' if rps is None else f'{rps:.2f}'} req/s (objective {slo['objective']:g} req/s)"
    if slo["kind"] in LATENCY_KINDS:
        text = (f"{pct(scope.get('good_share'))} of {scope['samples']} attempts succeeded within "
                f"{slo['objective']:,.0f} ms (needs {pct(scope.get('good_objective'))}; {scope['bad']} bad)")
        slow = scope["measured"] is not None and scope["measured"] > slo["objective"]
        return text + (f", P{_percentile(slo)} {ms(scope['measured'])}" if slow else
                       f", P{_percentile(slo)} {ms(scope['measured'])} is under the threshold but a failed attempt is bad "
                       "however fast it failed")
    if slo["kind"] == "availability":
        return f"{pct(scope['measured'])} of {scope['samples']} requests answered (objective {pct(slo['objective'])})"
    return f"{pct(scope['measured'])} of answers degraded (limit {pct(slo['objective'])})"


def _slo_value(slo: dict[str, Any]) -> str:
    if slo["kind"] == "goodput":
        return "—" if slo["measured"] is None else f"{slo['measured']:.2f} req/s"
    return ms(slo["measured"]) if slo["kind"] in LATENCY_KINDS else pct(slo["measured"])


def _percentile(slo: dict[str, Any]) -> str:
    value = 100.0 * float(slo.get("good_objective") or 0.99)
    return f"{value:g}"


def overlap_findings(run: RunData, summary: dict[str, Any]) -> list[Finding]:
    """Every pair of faults that overlapped, with what each pool had left meanwhile."""
    faults, healthy = summary["faults"], healthy_nodes(run.metrics)
    found = []
    for i, a in enumerate(faults):
        for b in faults[i + 1:]:
            lo, hi = max(a["start_s"], b["start_s"]), min(a["end_s"], b["end_s"])
            if hi <= lo:
                continue
            lows = pool_low(healthy, lo, hi)
            text = (f"{a['name']} ({window_text(a['start_s'], a['end_s'])}) and {b['name']} "
                    f"({window_text(b['start_s'], b['end_s'])}) overlapped for {secs(hi - lo)} s "
                    f"({window_text(lo, hi)})") + _pools_text(lows)
            severity = "bad" if any(row["lowest"] == 0 for row in lows) else "warn"
            anchor = "#chart-nodes_breakers" if lows else "#faults"
            found.append(Finding("overlap", severity, text + ".", anchor,
                                 "nodes chart" if lows else "fault table", lo, hi))
    return found


def _pools_text(lows: list[dict[str, Any]]) -> str:
    parts = []
    for row in lows:
        span = window_text(row["low_from_s"], row["low_to_s"])
        if row["lowest"] == 0:
            parts.append(f"the {row['pool']} pool had no healthy node (of {row['full']}) for {secs(row['low_s'])} s ({span})")
        else:
            parts.append(f"the {row['pool']} pool was down to {row['lowest']} of {row['full']} healthy nodes ({span})")
    return "; " + "; ".join(parts) if parts else "; no pool lost a healthy node meanwhile"


def shedding_findings(run: RunData, summary: dict[str, Any]) -> list[Finding]:
    """When 429/503 answers began (first second with at least 1% of the offered load shed)."""
    requests = run.requests
    status = requests["status"].to_numpy()
    shed = np.isin(status, SHED_STATUSES)
    if not shed.any():
        return []
    second = np.floor(requests["intended_s"].to_numpy(dtype=float)).astype(np.int64)
    second = np.clip(second, 0, None)
    offered = np.bincount(second)
    shed_per_s = np.bincount(second[shed], minlength=offered.size)
    onset = np.flatnonzero((shed_per_s >= SHED_ONSET_MIN) & (shed_per_s >= SHED_ONSET_SHARE * offered))
    if not onset.size:
        return []
    start, peak = float(onset[0]), int(np.argmax(shed_per_s))
    kinds = ", ".join(f"{int((status == code).sum())} x {code}" for code in SHED_STATUSES if (status == code).any())
    context = _context(summary, start)
    text = (f"Shedding began at {secs(start)} s{context}: 429/503 answers rose to {shed_per_s[peak]}/s "
            f"at {peak} s; {int(shed.sum())} requests shed in all ({kinds}), "
            f"{pct(shed.sum() / len(requests))} of scheduled")
    severity = "warn" if shed.sum() >= SHED_ONSET_SHARE * len(requests) else "info"
    return [Finding("shedding", severity, text + ".", "#chart-errors_sheds", "errors and sheds chart",
                    start, float(onset[-1] + 1))]


def _context(summary: dict[str, Any], t_s: float) -> str:
    """" (peak, during gpu-node-loss)": the phase and faults in force at `t_s`."""
    phase = next((p["name"] for p in summary.get("phases", [])
                  if p.get("start_s") is not None and p["start_s"] <= t_s < (p.get("end_s") or np.inf)), None)
    faults = [f["name"] for f in summary["faults"] if f["start_s"] <= t_s < f["end_s"] + 1.0]
    parts = ([f"in {phase}"] if phase else []) + ([f"during {' and '.join(faults)}"] if faults else [])
    return f" ({', '.join(parts)})" if parts else ""


def limit_findings(run: RunData, summary: dict[str, Any]) -> list[Finding]:
    """Was the generator or the service the limit? The phase where the service fell furthest behind."""
    generator = summary["generator"]
    if not generator["valid"]:
        return [Finding("limit", "bad", "The load generator, not the service, was the limit: "
                        + "; ".join(generator["reasons"]) + ".", "#generator", "load generator")]
    worst = _worst_phase(run, summary)
    lag = generator.get("schedule_lag_p99_ms")
    kept = f"schedule lag P99 {lag:.1f} ms, limit {generator['max_lag_p99_ms']:g} ms" if lag is not None else "no lag measured"
    if worst is None:
        return []
    name, lo, hi, offered, achieved = worst
    if achieved >= SERVICE_LIMIT_SHARE * offered:
        return [Finding("limit", "good", f"The service kept up with the offered load: at least "
                        f"{pct(achieved / offered)} answered ok in every phase, and the generator kept up ({kept}).",
                        "#chart-rates", "rates chart")]
    text = (f"The service, not the generator, was the limit: in {name} ({window_text(lo, hi)}) "
            f"{offered:.1f} req/s were offered on schedule ({kept}) and {achieved:.1f} req/s "
            f"were answered ok ({pct(achieved / offered)})")
    return [Finding("limit", "bad" if summary["verdict"] == "fail" else "warn", text + ".",
                    "#chart-rates", "rates chart", lo, hi)]


def _worst_phase(run: RunData, summary: dict[str, Any]) -> tuple[str, float, float, float, float] | None:
    """(phase, start, end, offered/s, ok/s) of the phase with the lowest ok share of its load."""
    window = summary.get("throughput_window_s") or [0.0, summary["scenario"]["duration_s"]]
    spans = [(str(p["name"]), float(p["start_s"]), float(p["end_s"])) for p in summary.get("phases", [])
             if p.get("start_s") is not None and p.get("end_s") is not None] or [("the run", float(window[0]), float(window[1]))]
    intended = run.requests["intended_s"].to_numpy(dtype=float)
    ok = run.requests["ok"].to_numpy(dtype=bool)
    best: tuple[str, float, float, float, float] | None = None
    for name, lo, hi in spans:
        inside = (intended >= lo) & (intended < hi)
        if inside.sum() < MIN_PHASE_REQUESTS or hi <= lo:
            continue
        row = (name, lo, hi, inside.sum() / (hi - lo), (inside & ok).sum() / (hi - lo))
        if best is None or row[4] / row[3] < best[4] / best[3]:
            best = row
    return best


def recovery_findings(run: RunData, summary: dict[str, Any]) -> list[Finding]:
    """Each fault: what the pools had left, and its recovery against the scenario's expectation."""
    healthy = healthy_nodes(run.metrics)
    faults = summary["faults"]
    return [_recovery(fault, pool_low(healthy, fault["start_s"], fault["end_s"]), _expected(run, fault),
                      [o["name"] for o in faults if o is not fault
                       and o["start_s"] < fault["end_s"] and o["end_s"] > fault["start_s"]])
            for fault in faults]


def _recovery(fault: dict[str, Any], lows: list[dict[str, Any]], expected: tuple[float, str],
              overlapping: list[str]) -> Finding:
    limit, source = expected
    head = f"{fault['name']} ({window_text(fault['start_s'], fault['end_s'])}"
    head += f", overlapping {' and '.join(overlapping)})" if overlapping else ")"
    pools = "; ".join(f"{r['pool']} pool down to {r['lowest']} of {r['full']} healthy nodes" for r in lows)
    head += f" left the {pools}" if pools else ""
    if fault["recovered"]:
        late = fault["recovery_s"] > limit
        text = (f"{head}; back within the SLOs {secs(fault['recovery_s'])} s after it ended "
                f"({'later than' if late else 'within'} the {secs(limit)} s expected: {source})")
        severity = "bad" if late else "good"
    elif fault.get("recovery_unclear"):
        text = f"{head}; whether it recovered cannot be told: {fault['recovery_unclear']}"
        severity = "warn"
    else:
        text = f"{head}; not back within the SLOs before the run ended (expected within {secs(limit)} s: {source})"
        severity = "bad"
    state = fault.get("steady_state")
    if state and (state["deviated"] or state["after_met"] is False):
        text += "; the experiment's steady-state hypothesis failed afterwards"
        severity = "bad"
    slug = fault["name"]
    return Finding("recovery", severity, text + ".", f"#fault-{slug}", f"{fault['name']} before/during/after",
                   fault["start_s"], fault["end_s"])


def _expected(run: RunData, fault: dict[str, Any]) -> tuple[float, str]:
    """The scenario's `expect_recovery` for this fault (scenario clock), else the fault's length."""
    for entry in run.scenario.chaos:
        if not isinstance(entry, dict) or entry.get("expect_recovery") is None:
            continue
        stem = str(entry.get("experiment", "")).rsplit("/", 1)[-1].split(".")[0]
        if fault["name"] in (entry.get("name"), stem):
            value = parse_duration(entry["expect_recovery"]) / run.scenario.traffic.time_scale
            return value, f"expect_recovery {entry['expect_recovery']}"
    return fault["end_s"] - fault["start_s"], "the fault's own length"


def cost_findings(summary: dict[str, Any]) -> list[Finding]:
    """Dollars per 1k characters during faults against the whole run."""
    cost = summary["cost"]
    during = (cost.get("during_faults") or {}).get("usd_per_1k_chars")
    overall = cost.get("usd_per_1k_chars_served")
    if not cost.get("known") or not summary["faults"] or during is None or not overall:
        return []
    change = during / overall - 1.0
    text = (f"During faults 1k characters cost {usd(during)} against {usd(overall)} over the whole run "
            f"({'+' if change >= 0 else ''}{pct(change)}): {usd(cost['during_faults']['usd'])} of nodes "
            f"for {cost['during_faults']['chars']:,} characters served in the fault windows")
    return [Finding("cost", "warn" if change > 0.1 else "info", text + ".", "#cost", "cost section")]


def calibration_findings(summary: dict[str, Any]) -> list[Finding]:
    """A relative peak resting on a capacity figure that no second window confirmed."""
    calibration = summary["scenario"].get("calibration") or {}
    if calibration.get("confirmed") is not False:
        return []
    text = (f"The peak of {calibration.get('peak_rps', 0):g} req/s rests on a capacity of "
            f"{calibration.get('capacity_rps', 0):g} req/s that one window showed and no second window confirmed "
            "(or whose search saw the machine answer its anchor load differently at its end than at its start), "
            "so that figure carries one window's confidence, not 95%, and was not cached; `rushhour capacity "
            "--calibrate` measures it again, or give traffic.peak_rps as a number")
    if calibration.get("machine_drift"):
        text += f". The search's anchor saw it: {calibration['machine_drift']}"
    return [Finding("calibration", "warn", text + ".", "#calibration", "calibration")]
