#!/usr/bin/env bash
# Nightly regression gate: one fixed-seed drill, then its P99 against the committed baseline.
#
#   ci/nightly.sh            # uses scenarios/nightly.yaml and ci/baselines/nightly
#
# The baseline is one run (requests.parquet in the directory) or several same-code runs (one per
# sub-directory, see ci/refresh_baseline.sh); with several, run-to-run noise is measured. The
# fixed seed replays the baseline's schedule, so the comparison is paired request by request;
# if the schedule changed (new traffic model), compare falls back to unpaired and says so.
#
# Environment overrides: RUSHHOUR (command, default "rushhour"), NIGHTLY_SCENARIO,
# NIGHTLY_BASELINE, NIGHTLY_OUT (results dir), NIGHTLY_ARTIFACTS (where report files are kept).
# Exit code: 0 pass, 1 SLO missed or P99 regression, 2 bad input, 3 run aborted or invalid.
set -uo pipefail
cd "$(dirname "$0")/.."

RUSHHOUR=${RUSHHOUR:-rushhour}
SCENARIO=${NIGHTLY_SCENARIO:-scenarios/nightly.yaml}
BASELINE=${NIGHTLY_BASELINE:-ci/baselines/nightly}
OUT=${NIGHTLY_OUT:-results/nightly-$(date -u +%Y%m%dT%H%M%SZ)}
ARTIFACTS=${NIGHTLY_ARTIFACTS:-artifacts/nightly}

keep_artifacts() {
    mkdir -p "$ARTIFACTS"
    for name in junit.xml report.html report.md summary.json; do
        [ -f "$OUT/$name" ] && cp "$OUT/$name" "$ARTIFACTS/"
    done
    echo "nightly: results in $OUT, report files kept in $ARTIFACTS"
}

echo "nightly: running $SCENARIO -> $OUT"
$RUSHHOUR run "$SCENARIO" --out "$OUT"
run_rc=$?
if [ "$run_rc" -ge 2 ]; then
    echo "nightly: the drill did not produce a valid measurement (exit $run_rc)" >&2
    keep_artifacts
    exit "$run_rc"
fi

has_baseline() {
    [ -f "$BASELINE/requests.parquet" ] && return 0
    compgen -G "$BASELINE/*/requests.parquet" >/dev/null
}

if ! has_baseline; then
    echo "nightly: no baseline in $BASELINE yet; see ci/baselines/README.md to create one" >&2
    $RUSHHOUR report "$OUT"
    report_rc=$?
    keep_artifacts
    exit "$report_rc"
fi

# The report carries the comparison (and a regression testcase in junit.xml) ...
$RUSHHOUR report "$OUT" --baseline "$BASELINE"
report_rc=$?
# ... and compare prints the side-by-side table and why it decided into the CI log.
$RUSHHOUR compare "$BASELINE" "$OUT"
compare_rc=$?
keep_artifacts

if [ "$compare_rc" -ne 0 ]; then
    exit "$compare_rc"
fi
exit "$report_rc"
