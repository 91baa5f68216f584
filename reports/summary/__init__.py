"""summary.json: the aggregation of a run's figures (`aggregate`), its typed model (`model`), and the
findings that explain the verdict (`findings`, `finding_rules`).

The model's parts: `rows` (the slos and faults lists), `cost_section`, `measures_section`
(streaming, goodput, the target's own metrics, the soak windows), `harness_section` (what the run
recorded about itself) and `scenario_section` (the calibration and the harness's overhead).
"""
