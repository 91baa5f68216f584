"""Faults on Kubernetes, for the reference server's pools and for a user's own workload.

    actions.py     Chaos Toolkit actions on the reference server's pools (built on chaostoolkit-kubernetes)
    workload.py    Chaos Toolkit actions on a user's workload, chosen by namespace and label selector
    probes.py      read-only probes: rushhour's pools, and a user's workload by label selector
    selection.py   a user's workload as the faults select it: a namespace and a label selector
    objects.py     the objects the actions create or patch, built apart from any API call
    marked.py      a fault that carries its lease on the object it changes, made and undone one way

The leases, so that every fault ends by itself:

    leases.py      what rushhour left in a cluster, found, and what expired removed
    leaseclock.py  the keeper's clock: each lease counted down on the boot clock
    sweeper.py     one sweep of expired faults, run inside the cluster (CronJob `sweeper.yaml`)
"""
