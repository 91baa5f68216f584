"""rushhour's Chaos Toolkit extension and experiment files.

    local/          actions and probes against the reference server's admin API (and its Redis)
    service/        a user's own service: its process by PID file (pause, kill), network faults
                    through mitmproxy or Toxiproxy
    kubernetes/     actions and probes for the Kubernetes backend (chaostoolkit-kubernetes, the
                    official client): pods, node drain/cordon, NetworkPolicy partitions, scaling
    client.py       the one HTTP client every local activity goes through
    live.py         live latency/error rate for steady-state probes
    leases.py       every fault ends by itself: a lease per fault, whoever is left to end it
    leasefiles.py   lease files: a fault's renewable end, writable by this user only
    leasekeeper.py  the keeper process that undoes a fault when its lease runs out
    *.json          experiment files (`chaos run` them, or name them in a scenario's chaos section)

When experiments run inside a drill is decided by the application (`rushhour.scenarios.run.chaos.timeline`).
"""
