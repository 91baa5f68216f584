"""rushhour's shared kernel: the vocabulary every package speaks and the results contract.

The bottom layer: every other package may import it, it imports none of them.

- `contract`: every results file's name, the schedule's, part files' and requests' columns and types, exit codes
- `events`: one model per event type of events.jsonl, written and read through them
- `calibration`: the calibration record a relative peak resolved to
- `generator`: the load generator's schedule lag and the verdict on its health
- `clock`: one parser and formatter of human time ("20:10", "3m", "250ms")
- `validation`: one way to word a user file's errors (file and field named)
- `processes`: free ports, children that die with their parent, one process-stop helper
- `quantiles`: one percentile (nearest rank)
- `loopback`: the loopback guard (is this target on this machine)
- `atomic`: result files written whole or not at all, never through a link
- `safetext`: text from files and targets made safe to print on a terminal and in Markdown
- `jsonfile`, `yamlfile`: JSON and YAML as every reader parses them (too deep: a clear error; YAML: no key twice)
"""
