"""summary.json: the aggregation of a run's figures (`aggregate`), its typed model (`model`, with
the rows, cost, measures, harness and scenario sections), and the findings that explain the
verdict (`findings`, `finding_rules`).
"""
