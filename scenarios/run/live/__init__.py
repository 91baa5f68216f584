"""Watching a drill while it runs: the seam the drill feeds (`watch`), the numbers folded from the
workers' part files in bounded memory (`fold`, `hist`, `rows`, `slo`, `state`), and what shows them
(`metrics`: the Prometheus endpoint; `view`: the terminal view; `progress`: the progress line), and
what the drill refused from the parties it does not trust (`refusals`)."""
