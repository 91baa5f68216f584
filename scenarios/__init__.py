"""rushhour's application layer: what a drill is and how it runs. Nothing imports this package.

    spec/   the scenario file: model (pydantic), plan (schedule, phases, chaos times), chaos
            (experiments planned once), variants (server policies compared)
    load/   load generation: Locust as a subprocess (locust), its workers, open- and closed-loop
            firing, the jobs follower, result part files, the locustfiles
    run/    one drill: drill (orchestration), embedded server, scraper, events.jsonl, progress,
            chaos timeline and its `chaos run` subprocesses
    cli/    every `rushhour` sub-command; `cli.main` is the console script
"""
