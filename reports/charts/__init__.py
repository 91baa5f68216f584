"""The report's charts: which ones a run shows (`catalog`), the series they draw (`timeseries`),
and the drawing (`plotting`, with fault bands from `faultlane`); the TTFT/TPOT chart of a streaming
run (`stream_charts`) and the target's own metrics beside rushhour's (`target_charts`).
"""
