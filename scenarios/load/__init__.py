"""Load generation: Locust in a subprocess firing the schedule open-loop (or closed), results in parts.

`settings` holds every setting of a load run (built once, validated where it arrives), `session`
drives one run from the runner's side, `locust` the Locust process, `worker` a worker's share and
the control files, `openloop` the firing, `handoff` the send stamps, `parts` the result
files and their merge, `health` the generator's figures. Across hosts (`rushhour run --workers N`)
`master_relay` and `worker_relay` carry the same control and part files over Locust's message
channel, and `clocksync` places the start on each worker's clock.
"""
