"""The report's charts: which ones a run shows (`catalog`), the series they draw (`timeseries`),
and the drawing (`plotting`, with fault bands from `faultlane`; streaming and target-metrics charts).
"""
