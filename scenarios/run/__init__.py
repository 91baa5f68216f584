"""One drill from boot to report: server, load, chaos timeline, scraper, events, teardown.

The order of a run:

    lifecycle.py      claim, boot, probe, load and watch, teardown, write, report: written once for a
                      drill, an A/B run and the overhead ladder
    drill.py          one drill's steps in that order, always leaving results and a report
    resultsdir.py     a results folder claimed empty for one run; default names never collide
    embedded.py       the bundled reference server booted, warmed and stopped (`target: embedded`)
    targetcheck.py    the look at a drill's target before the load, the same for every kind of target
    signals.py        Ctrl-C, SIGTERM and SIGHUP: stop cleanly, never before the results are written
    stopping.py       stop conditions: end a drill early when the service has clearly failed
    teardown.py       every stop step run, even when one before it failed, then what was measured written
    rebuild.py        the results of a run whose harness died before writing them

What a run records beside the load:

    events.py         events.jsonl: the run's timeline, one JSON object per line, flushed as it happens
    envinfo.py        what the drill ran on, recorded in its first event
    poller.py         a background thread polling one endpoint on a steady rhythm
    scraper.py        `/v1/status` once a second into server_metrics.parquet rows
    targetmetrics.py  the target's own Prometheus endpoint once a second into target_metrics.parquet rows
    target_events.py  what a target says about itself (`/v1/events`), safe to write beside the harness's

The harness's own overhead:

    overhead.py       how fast one Locust process fires validly, and the latency the harness adds
    nullserver.py     a target that costs nothing: answers every request at once, on loopback only

    chaos/            the chaos timeline and each `chaos run` as a child process
    live/             watching a drill while it runs: tallies, the metrics endpoint, the terminal view
    audit/            the leak audit: the process ledger, its scope, its steps and verdict
"""
