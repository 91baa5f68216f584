"""`rushhour capacity`: the highest arrival rate at which every SLO still holds, with and without a fault.

    search.py       bracket upward, then bisect to the precision (pure: a step is a function)
    throughput.py   the saturated throughput in seconds (a closed loop of doubling size)
    bracket.py      a search's rates and step lengths planned around that throughput (pure)
    relaxation.py   a fresh step's warm-up scaled to its queue's relaxation time at the step's load (pure)
    steps.py        one step as data: constant-rate schedule, what is known mid-step, the verdict
    stepper.py      one step for real: a Locust session, judged at its planned looks, stopped at the first call
    pool_status.py  the target's pools during a step (utilisation) and calm between steps
    conditions.py   healthy, N-1 (a quality node held down) or any experiment held for the search
    job.py          one job resolved: SLO floors, step rules, the longer rules of an open step's retry
    anchor.py       the search's anchor: did the machine answer one load alike at the start, between steps, at the end
    record.py       steps and searches as the plain data of capacity.json
    target.py       the service a job loads: the embedded reference server (booted here) or a URL
    targetprobe.py  the job's look at its target before the first step
    runner.py       one capacity job in one run's lifecycle: boot, hold each condition, search, write, render
    document.py     capacity.json assembled, checked against its model, written with capacity.html
    interrupt.py    Ctrl-C, SIGTERM and SIGHUP: stop the search, restore, write, exit 3
    calibrate.py    per-machine cache of measured capacities; `peak_rps: 0.7x capacity` resolved here
    freshness.py    the check step of a cached capacity, and a search widened above its ceiling

The statistics of a step (SLO verdicts at 95% confidence, percentiles, rates) are in
`rushhour.reports.capacity.stepstats`, its sequential design in `rushhour.reports.estimate.sequential`; the knee
curve and capacity.html in `rushhour.reports.capacity.page`.
"""
