"""The judgement of an A/B run (`rushhour ab`), from its results folder.

- `paired`: each arm's percentile over the night's answered requests and their ratio, with an
  interval from a moving-block bootstrap of slice pairs; failure shares with the interval of their
  difference (the same bootstrap beside Newcombe's score interval).
- `groups`: which comparisons a scenario asks for (its latency SLOs, per priority) and the
  verdict of each.
- `confounds`: arms answering from their caches in different shares (the night invalid).
- `calibration`: the runner's record from `rushhour ab calibrate`, quoted by every verdict.
- `document`: the ab.json document and the run's verdict; `document_model`: ab.json as one typed
  model; `render`: ab.md, ab.html (the per-slice chart) and junit.xml.
- `build`: the one call that reads the folder and writes every file (`rushhour report` too).
"""
