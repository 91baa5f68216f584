"""Faults on a local reference server (`rushhour serve`), through its admin API.

    actions.py   Chaos Toolkit actions: kill, restart, partition or slow a node or pool, add latency or errors
    probes.py    Chaos Toolkit probes: node states and live SLOs
    nodes.py     the cluster's nodes read from `/v1/status`, and which one a fault hits
    scaling.py   a pool scaled under a lease: it goes back to its size by itself
    held.py      the leases of faults held on a node, renewed
    redis.py     actions and probes for the Redis behind the server's L2 cache
"""
