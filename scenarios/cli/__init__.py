"""The `rushhour` command line: one module per sub-command; `main` is the console script.

A drill and its results:

    main.py            the console script: one group, each command imported only when it runs
    run.py             `rushhour run SCENARIO`: validate, (dry-)plan and run one drill
    run_target.py      `rushhour run`'s look at the target before anything starts (exit 2 on a misfit)
    calibration.py     the calibration step of `rushhour run` and `rushhour capacity --calibrate`
    override_flags.py  the options of the scenario settings a flag can override, from their one declaration
    report.py          `rushhour report` and `rushhour compare`
    capacity.py        `rushhour capacity SCENARIO`: the highest rate at which every SLO holds
    ab.py              `rushhour ab SCENARIO --baseline TARGET --candidate TARGET`: one verdict
    ab_calibrate.py    `rushhour ab calibrate`: the runner itself measured

Writing scenarios:

    init.py            `rushhour init`: probe a running service and write a first scenario for it
    identify.py        what a running service speaks: protocols, models, streaming
    init_template.py   the commented scenario `rushhour init` writes
    schema.py          `rushhour schema`: the JSON Schema of scenario files, from their pydantic models
    traffic.py         `rushhour traffic MODEL`: preview a traffic model

Servers and hosts:

    serve.py           `rushhour serve`: the reference translation server
    node.py            `rushhour node`: one model node as its own network service
    worker.py          `rushhour worker --master HOST:PORT`: this host's CPUs lent to a drill elsewhere
    scaleout.py        the checks both ends of a drill across hosts share: where the master listens, the secret

    errors.py          the error for bad input (a sentence, exit 2) and the finite-number check of numeric flags
"""
