"""`rushhour ab`: a baseline and a candidate measured side by side, in one run, on one machine.

- `trials`: the interleaving design (the scenario's schedule cut into trials, ABBA blocks in an
  order drawn from the seed), which row goes to which arm, whole or a chunk of rows at a time.
- `targets`: what a TARGET argument means (a URL behind the loopback guard, or the bundled
  reference server booted for the run), and the probe of each arm before any load.
- `runner`: one A/B run, start to finish: boot, probe, fire the whole schedule open-loop with each
  row sent to its trial's arm, write the results folder, judge it (`rushhour.reports.ab`); the schedule is
  drawn, written and merged a chunk at a time, never held whole.
"""
