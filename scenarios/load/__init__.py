"""Load generation, the runner's side: Locust in a subprocess, its results merged and judged.

What runs inside the Locust process (the locustfiles, the firers, the part writer, the relays
across hosts) and the settings both sides read are in `rushhour.scenarios.generator`, below this
package; nothing there imports this one.

    session.py            one load run: start Locust, sync the start, watch, stop
    locust.py             Locust as a subprocess: command line, start handshake, CPU watch, clean stop
    parts.py              result parts read back and merged into requests.parquet
    merge.py              the parts merged onto the schedule a chunk at a time
    health.py             the generator's own health from the merged requests: did it keep its schedule?
"""
