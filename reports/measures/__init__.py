"""The figures of one run, each from its results. `facts` derives once what several of them need.

The verdict:
- `slos`: SLO verdicts (value, met or not, error budget spent, burn rates), per phase
- `steady`: where the warm-up ends (MSER-5 on per-second latency); `steady_slos`: the steady_only
  SLOs judged again over the steady windows
- `burn`: multi-window burn rates (would this run have paged someone?)
- `drift`: soak runs: a trend per window of latency, errors and memory, and the `drift` SLO
- `goodput`: requests per second that met every per-request objective

Faults and what the run served:
- `faults`: how much each fault hurt and how long it took to heal
- `periods`: before, during and after each fault: P99, error rate and achieved rate
- `pools`: healthy nodes per pool and second
- `streaming`: TTFT, TPOT, inter-token gaps and output tokens
- `documents`: long documents through the jobs API: first text and the whole
- `targetmetrics`: the target's own metrics as time series and a summary section

Cost:
- `cost`: dollars per thousand translated characters, from node-seconds and a dated price list
- `tokencost`: dollars per million output and input tokens, with intervals

The harness and the run's setting:
- `overhead`: the harness's own overhead, and the SLOs too tight to judge with it
- `harness`: what the harness checked about itself (the leak audit, the scraper)
- `live`: where the drill's live metrics were, and when it ran
- `environment`: hardware, execution provider, versions, commit, seed
"""
