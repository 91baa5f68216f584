#!/usr/bin/env bash
# Replace the nightly baseline with a finished, passing run.
#
#   ci/refresh_baseline.sh results/nightly-20261130T020000Z
#
# Copies only what `rushhour compare` reads (requests, scenario, server metrics, events) plus
# the summary for reviewers, after checking that the run itself passes. Commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."

RUN=${1:?usage: ci/refresh_baseline.sh RESULTS_DIR}
BASELINE=${NIGHTLY_BASELINE:-ci/baselines/nightly}
RUSHHOUR=${RUSHHOUR:-rushhour}

if ! $RUSHHOUR report "$RUN"; then
    echo "refresh: $RUN does not pass on its own; a failing run is not a baseline" >&2
    exit 1
fi
mkdir -p "$BASELINE"
for name in requests.parquet scenario.yaml server_metrics.parquet events.jsonl summary.json; do
    if [ -f "$RUN/$name" ]; then cp "$RUN/$name" "$BASELINE/"; fi
done
echo "refresh: baseline in $BASELINE now comes from $RUN; review and commit it"
