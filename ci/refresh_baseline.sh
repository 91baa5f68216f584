#!/usr/bin/env bash
# Replace the stored baseline runs with one or several finished, passing drills of the same code.
#
#   ci/refresh_baseline.sh results/nightly-20261130T020000Z
#   ci/refresh_baseline.sh results/nightly-a results/nightly-b results/nightly-c
#
# Stored runs serve `rushhour compare` (history and trends: how P99 moved over releases). The
# nightly gate does not read them: ci/nightly.sh measures the baseline ref and the working tree
# side by side with `rushhour ab`, because runs taken at different times cannot separate the
# machine's load from the code. One run is copied into the baseline directory itself; several go
# to run-1, run-2, ... inside it, and `rushhour compare` then estimates their run-to-run variance
# from them. Copies only what `rushhour compare` reads (requests, schedule, scenario, server
# metrics, events) plus the summary for reviewers, after checking that each run passes.
# Commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 1 ] || { echo "usage: ci/refresh_baseline.sh RESULTS_DIR [RESULTS_DIR...]" >&2; exit 2; }
BASELINE=${NIGHTLY_BASELINE:-ci/baselines/nightly}
RUSHHOUR=${RUSHHOUR:-rushhour}
FILES="requests.parquet schedule.parquet scenario.yaml server_metrics.parquet events.jsonl summary.json"

for run in "$@"; do
    if ! $RUSHHOUR report "$run"; then
        echo "refresh: $run does not pass on its own; a failing run is not a baseline" >&2
        exit 1
    fi
done

copy_run() {
    mkdir -p "$2"
    for name in $FILES; do
        if [ -f "$1/$name" ]; then cp "$1/$name" "$2/"; fi
    done
}

mkdir -p "$BASELINE"
for name in $FILES; do rm -f "$BASELINE/$name"; done
rm -rf "$BASELINE"/run-*
if [ $# -eq 1 ]; then
    copy_run "$1" "$BASELINE"
else
    index=1
    for run in "$@"; do
        copy_run "$run" "$BASELINE/run-$index"
        index=$((index + 1))
    done
fi
echo "refresh: baseline in $BASELINE now comes from $*; review and commit it"
