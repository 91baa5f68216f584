"""rushhour's shared kernel: the vocabulary every package speaks and the results contract.

The bottom layer: every other package may import it, it imports none of them.

The results contract and the records a run writes:
- `contract`: every results file's name, the schedule's, part files' and requests' columns and types, exit codes
- `events`: one model per event type of events.jsonl, written and read through them
- `eventlines`: events.jsonl read line by line through those models (report, rebuild, live view)
- `calibration`: the calibration record a relative peak resolved to
- `generator`: the load generator's schedule lag and the verdict on its health

The vocabulary:
- `clock`: one parser and formatter of human time ("20:10", "3m", "250ms")
- `validation`: one way to word a user file's errors (file and field named)
- `quantiles`: one percentile (nearest rank)
- `processes`: free ports, children that die with their parent, one process-stop helper
- `environment`: every `RUSHHOUR_*` variable declared once (name, who sets it, who reads it)

The loopback guard:
- `loopback`: may the harness contact this address, is it on this machine
- `pinning`: host names pinned to the addresses the guard checked
- `pinned_http`: httpx transports that connect only at those pinned addresses

Files:
- `atomic`: result files written whole or not at all, never through a link
- `textfile`: a text file a person or a run wrote, read whole, or one sentence naming why not
- `safetext`: text from files and targets made safe to print on a terminal and in Markdown
- `jsonfile`, `yamlfile`: JSON and YAML as every reader parses them (too deep: a clear error; YAML: no key twice)
"""
