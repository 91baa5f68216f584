"""The judgement of an A/B run (`rushhour ab`), from its results folder.

- `paired`: paired statistics over trial pairs: a percentile ratio with its interval and minimum
  detectable effect, and an error-share difference (vectorised cluster bootstrap).
- `groups`: which comparisons a scenario asks for (its latency SLOs, per priority) and the
  verdict of each and of the whole run.
- `render`: ab.json, ab.md, ab.html (with the per-trial P99 chart) and junit.xml.
- `build`: the one call that reads the folder and writes every file (`rushhour report` too).
"""
