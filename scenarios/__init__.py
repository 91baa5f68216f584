"""rushhour's application layer: what a drill is and how it runs. Nothing imports this package.

    spec/        the scenario file: model (pydantic), plan (schedule, phases, chaos times), chaos
                 (experiments planned once), overrides, variants (server policies compared)
    protocols/   target protocols: one schedule row as one request, the answer as result columns;
                 the target's admission (guard, features, probe)
    load/        load generation, the runner's side: Locust as a subprocess, its part files
                 merged into requests.parquet, the generator's health
    generator/   what runs inside a Locust process: the locustfiles, open- and closed-loop
                 firing, the jobs follower, result part files, the relays across hosts
    run/         one run's lifecycle and a drill in it: embedded server, scraper, events.jsonl,
                 the chaos timeline, the live view, the leak audit, teardown
    capacity/    `rushhour capacity`: the highest rate at which every SLO holds
    ab/          `rushhour ab`: a baseline and a candidate side by side in interleaved trials
    cli/         every `rushhour` sub-command; `cli.main` is the console script
"""
