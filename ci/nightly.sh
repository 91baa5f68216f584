#!/usr/bin/env bash
# Nightly regression gate: this working tree against a baseline git ref, side by side in one run.
#
#   ci/nightly.sh            # scenarios/nightly.yaml; baseline: the merge-base with the main branch
#
# Both versions of the reference server run at once on this machine, each started with
# `rushhour serve` on a free loopback port, and `rushhour ab` sends the scenario's traffic to
# them in the same minutes (each request to one of them, at random), so both meet the same machine. The baseline is
# the ref NIGHTLY_BASELINE_REF (default: the merge-base of HEAD with NIGHTLY_MAIN_BRANCH, itself
# origin/main when that exists, else main), installed once into its own cached environment by
# ci/baseline_env.sh; the candidate is this working tree. On the main branch itself the default
# baseline is HEAD: a same-code night; set NIGHTLY_BASELINE_REF to a release tag to gate against it.
#
# Environment overrides:
#   RUSHHOUR                  this tree's command (default "rushhour")
#   NIGHTLY_SCENARIO          the traffic both arms get (default scenarios/nightly.yaml)
#   NIGHTLY_BASELINE_REF, NIGHTLY_MAIN_BRANCH, NIGHTLY_BASELINE_DEPS, NIGHTLY_CACHE  (ci/baseline_env.sh)
#   NIGHTLY_BASELINE_RUSHHOUR a ready command for the baseline's `rushhour` (skips building its environment)
#   NIGHTLY_CANDIDATE_URL     a candidate already running (nothing is started for it)
#   NIGHTLY_SERVE_ARGS        `rushhour serve` options for both servers (default: the scenario's
#                             embedded target: --nodes N --max-batch-size B)
#   NIGHTLY_TRIALS, NIGHTLY_DURATION, NIGHTLY_SEED, NIGHTLY_INTERLEAVE   passed to `rushhour ab`
#                             (without NIGHTLY_SEED each night draws a fresh seed and fresh texts)
#   NIGHTLY_CALIBRATION       the runner's record from `rushhour ab calibrate`, quoted by the verdict
#   NIGHTLY_BOOT_TIMEOUT      seconds a server may take to become ready (default 300)
#   NIGHTLY_PYTHON            a Python with PyYAML for the small helpers (default python3)
#   NIGHTLY_OUT               results dir; NIGHTLY_ARTIFACTS where report files and server logs are kept
# Exit code: rushhour ab's: 0 no regression, 1 regression, 2 bad input, 3 invalid or inconclusive
# (also 3 when a server does not come up).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

RUSHHOUR=${RUSHHOUR:-rushhour}
SCENARIO=${NIGHTLY_SCENARIO:-scenarios/nightly.yaml}
OUT=${NIGHTLY_OUT:-results/nightly-$(date -u +%Y%m%dT%H%M%SZ)}
ARTIFACTS=${NIGHTLY_ARTIFACTS:-artifacts/nightly}
BOOT_TIMEOUT=${NIGHTLY_BOOT_TIMEOUT:-300}
PYTHON=${NIGHTLY_PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nightly.XXXXXX")
PIDS=()
mkdir -p "$ARTIFACTS"

stop_servers() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    PIDS=()
    cp "$WORK"/*.log "$ARTIFACTS/" 2>/dev/null
    rm -rf "$WORK"
}
trap stop_servers EXIT
trap 'exit 130' INT TERM

baseline_ref() {
    if [ -n "${NIGHTLY_BASELINE_REF:-}" ]; then echo "$NIGHTLY_BASELINE_REF"; return; fi
    local main=${NIGHTLY_MAIN_BRANCH:-}
    if [ -z "$main" ]; then
        if git rev-parse --verify --quiet origin/main >/dev/null; then main=origin/main; else main=main; fi
    fi
    git merge-base HEAD "$main" || { echo "nightly: no merge-base of HEAD with \"$main\" (NIGHTLY_MAIN_BRANCH)" >&2; return 2; }
}

serve_args() {
    if [ -n "${NIGHTLY_SERVE_ARGS:-}" ]; then echo "$NIGHTLY_SERVE_ARGS"; return; fi
    "$PYTHON" - "$SCENARIO" <<'EOF'
import sys, yaml
embedded = ((yaml.safe_load(open(sys.argv[1])) or {}).get("target") or {}).get("embedded") or {}
args = [f"--nodes {embedded['nodes']}"] if "nodes" in embedded else []
args += [f"--max-batch-size {embedded['max_batch_size']}"] if "max_batch_size" in embedded else []
print(" ".join(args))
EOF
}

free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server NAME COMMAND: `COMMAND serve` on a free loopback port, in the background; its PID
# is kept for the exit trap, its URL in URLS[NAME].
declare -A URLS SERVER_PIDS
start_server() {
    local name=$1 command=$2 port
    port=$(free_port)
    URLS[$name]=http://127.0.0.1:$port
    # shellcheck disable=SC2046  # serve_args is a list of options
    RUSHHOUR_STATE_DIR="$WORK/state-$name" $command serve --host 127.0.0.1 --port "$port" $(serve_args) \
        >"$WORK/$name-server.log" 2>&1 &
    SERVER_PIDS[$name]=$!
    PIDS+=("$!")
}

# wait_ready NAME: until the server answers /readyz; exit 3 when it dies or takes too long.
wait_ready() {
    local name=$1 deadline=$((SECONDS + BOOT_TIMEOUT))
    until curl -fsS -o /dev/null "${URLS[$name]}/readyz" 2>/dev/null; do
        if ! kill -0 "${SERVER_PIDS[$name]}" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
            echo "nightly: the $name server did not become ready at ${URLS[$name]} (log: $ARTIFACTS/$name-server.log)" >&2
            tail -n 20 "$WORK/$name-server.log" >&2
            return 3
        fi
        sleep 1
    done
}

keep_artifacts() {
    for name in ab.json ab.html ab.md junit.xml; do
        [ -f "$OUT/$name" ] && cp "$OUT/$name" "$ARTIFACTS/"
    done
    echo "nightly: results in $OUT, report files kept in $ARTIFACTS"
}

main() {
    local ref baseline_cmd baseline_url candidate_url rc
    if [ -n "${NIGHTLY_BASELINE_RUSHHOUR:-}" ]; then
        baseline_cmd=$NIGHTLY_BASELINE_RUSHHOUR
        ref=${NIGHTLY_BASELINE_REF:-"(given command)"}
    else
        ref=$(baseline_ref) || return 2
        baseline_cmd=$(ci/baseline_env.sh "$ref") || return $?
    fi
    echo "nightly: baseline $ref ($baseline_cmd), candidate this working tree"
    start_server baseline "$baseline_cmd"
    [ -n "${NIGHTLY_CANDIDATE_URL:-}" ] || start_server candidate "$RUSHHOUR"
    wait_ready baseline || return $?
    baseline_url=${URLS[baseline]}
    candidate_url=${NIGHTLY_CANDIDATE_URL:-}
    if [ -z "$candidate_url" ]; then
        wait_ready candidate || return $?
        candidate_url=${URLS[candidate]}
    fi
    echo "nightly: $SCENARIO -> $OUT (baseline $baseline_url, candidate $candidate_url)"
    $RUSHHOUR ab "$SCENARIO" --baseline "$baseline_url" --candidate "$candidate_url" --out "$OUT" \
        ${NIGHTLY_TRIALS:+--trials "$NIGHTLY_TRIALS"} ${NIGHTLY_DURATION:+--duration "$NIGHTLY_DURATION"} \
        ${NIGHTLY_SEED:+--seed "$NIGHTLY_SEED"} ${NIGHTLY_INTERLEAVE:+--interleave "$NIGHTLY_INTERLEAVE"} \
        ${NIGHTLY_CALIBRATION:+--calibration "$NIGHTLY_CALIBRATION"}
    rc=$?
    keep_artifacts
    return "$rc"
}

main
exit $?
