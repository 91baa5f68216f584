"""The statistics core: the only code that turns observations into an interval, a test or an
effective sample size.

- `intervals`: percentiles with their confidence intervals, shares and their bounds.
- `sequential`: a capacity step's planned looks and error spending.
"""
