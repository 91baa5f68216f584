"""The statistics core: the only code that turns observations into an interval, a test or an
effective sample size.

- `intervals`: percentiles of independent samples with their order-statistic intervals; shares.
- `blocks`: how much independent evidence a time-ordered series holds. `dependence(series)`
  returns a `Dependence` (method, block length, blocks, lag-1 correlation of block means,
  samples, effective sample size); `block_means`, `lag1` are its parts.
- `series`: intervals for requests in time order, sized by `blocks.dependence`:
  `quantile_interval(values, percentile)` and `share_interval(hits)` return a `SeriesInterval`
  (value, low, high, confidence, dependence, enough, note); `needed_effective(percentile)` and
  `not_enough_text(...)` say how many independent requests a percentile needs.
- `sequential`: a capacity step's planned looks and error spending.
- `trend`: a least-squares slope whose interval is widened for correlated points
  (`trend_interval(x, y, confidence)` returns a `Trend`: slope, bounds, lag-1 charged,
  effective points, method); the drift SLO's.
- `blockshare`: is one run's bad share higher than other runs'? `share_increase(current,
  baselines)` tests on counts over the design effect and, with several baselines, on their
  run-to-run spread (`ShareIncrease`); the compare gate's failure share.
- `strata`: the dependence of a run whose load changes at known edges (phases, fault windows),
  measured within each stretch and combined: `stratified_dependence(series, labels)`, the
  labels from `stretch_labels(times, edges)`; `series` takes them as `strata=`.
- `pairedblocks`: two samples measured over the same slices, resampled by moving blocks of slice
  pairs: `percentile_ratio` (a ratio of nearest-rank percentiles, each bound at its own tail) and
  `share_difference` (a difference of shares, beside Newcombe's score interval); the A/B gate's.
- `quantilebound`: is a percentile within its threshold? A one-sided bound on the percentile,
  its standard error from the density there and the dependence of the requests around it.
- `anchor`: did a machine answer one load alike at two moments (two windows at one rate side by
  side); a capacity search's start and end.
"""
