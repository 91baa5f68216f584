"""Benchmarks: scripts that print a table and write JSON (not installed with the package).

    python -m benchmarks.server      reference server: served vs raw model, batching, cache hits
    python -m benchmarks.generator   open-loop generator: rate vs send lag vs CPU
    python -m benchmarks.generator_profile   where one Locust process's CPU goes (py-spy)
    python -m benchmarks.overhead    the harness's own overhead against a null target
    python -m benchmarks.reports     report building on a million requests
    python -m benchmarks.traffic     schedule generation
    python -m benchmarks.model       model build time and per-call latency
"""
