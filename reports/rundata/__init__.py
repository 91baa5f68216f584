"""One run's results folder read into typed frames, and the vocabulary every figure shares.

- `results`: reading and validating the folder (`RunData`).
- `attempts`: attempted requests and when they ended (a failure is a slow request, not a missing one).
- `window`: the part of the run planned as load.
- `selection`: which requests an SLO or a phase covers.
"""
