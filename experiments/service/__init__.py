"""Faults on a user's own service, which rushhour neither wrote nor can ask to fail.

    process.py   the service's process, found by its PID file: read, checked, signalled
    actions.py   pause (SIGSTOP for the hold, SIGCONT after, under a lease), kill (SIGKILL), resume
    probes.py    is the process running, paused, answering at its URL
    proxy.py     latency, errors, reset and blackhole on the path to the service, through mitmproxy
    mitm_addon.py  the mitmproxy addon that applies them (standard library only: mitmdump loads it)
    network.py   latency, reset and blackhole through a Toxiproxy proxy, where Toxiproxy is installed

Nothing here needs anything from the service but its process and its port.
"""
