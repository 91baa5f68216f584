"""What runs inside a Locust process, master or worker: the schedule's share fired, each request recorded.

The runner (`rushhour.scenarios.load`) starts Locust with one of the two locustfiles here and reads
back what they wrote; nothing here imports the runner's side, and nothing here imports pandas (a
contract in pyproject.toml; `partwriter.keep_pandas_out` settles pyarrow's own lazy import of it).

    settings.py           every setting of a load run, from the scenario to the firer, in one model
                          (built by the runner, read here)

The entry points and what they fire:

    locustfile.py         the entry point of an open-loop drill
    locustfile_closed.py  the entry point of a closed-loop drill (`load.mode: closed`)
    closed.py             the closed-loop personas behind it
    user.py               the Locust user both entry points' users derive from: protocol, TLS, no redirect
    share_run.py          a worker process's share: read it, wait for the common start, fire, report
    sharestream.py        that share read a batch of rows at a time, the next made ready on a thread
    openloop.py           open-loop firing: every request leaves at its intended time
    handoff.py            when a request really left: the moment it was handed a connection
    wire.py               one row sent through the target's protocol with Locust's FastHttpSession
    direct.py             one row sent straight through geventhttpclient, beneath Locust's session
    jobs.py               long documents through the jobs API: submit once, poll in the same greenlet
    turns.py              the prompts of trace rows and conversation turns, built just before sending
    pinned_pools.py       connection pools that connect a host name only where the loopback guard looked
    partwriter.py         each finished request's fields written to parquet part files

Across hosts (`rushhour run --workers N`):

    master_relay.py       the master's side: the control files relayed over Locust's channel
    worker_relay.py       a remote worker's side (`rushhour worker --master HOST:PORT`)
    worker_local.py       what a remote worker decides for itself, whatever its master says
    clocksync.py          the start placed on each worker's clock; the version both sides share
    clusterauth.py        the shared secret: who may join, and which messages are theirs
    control_auth.py       Locust's master-to-worker control messages, signed and checked
"""
