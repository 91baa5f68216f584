#!/usr/bin/env bash
# The `rushhour` of a git ref, in its own environment built once and cached by the ref's commit.
#
#   ci/baseline_env.sh REF        # prints the path of a command that runs that ref's `rushhour`
#
# The ref's tree is checked out as a detached git worktree and given its own virtual environment,
# both under NIGHTLY_CACHE/<commit sha> (default .rushhour/nightly, ignored by git), beside the
# working tree's .venv; a later night at the same commit reuses them. The command printed runs in
# the ref's tree with PYTHONPATH unset and Python in isolated mode, so neither the current
# directory nor PYTHONPATH can put this working tree's packages in front of the ref's, not even in
# the node processes the server starts (relative paths in its arguments are the ref's tree's).
#
# NIGHTLY_BASELINE_DEPS:
#   full   (default) install the ref with its own dependencies from the package index
#          (extras NIGHTLY_BASELINE_EXTRAS, default "cpu"): a dependency change is measured too.
#   shared install nothing: the environment sees the ref's source and the dependencies already
#          installed for NIGHTLY_PYTHON (fast and offline; the two versions then share them).
# NIGHTLY_PYTHON: the interpreter to build with (default python3 on PATH).
# Exit 2 when REF is not a commit; the install's own exit code when it fails.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

[ $# -eq 1 ] || { echo "usage: ci/baseline_env.sh REF" >&2; exit 2; }
REF=$1
if ! SHA=$(git -C "$ROOT" rev-parse --verify --quiet "$REF^{commit}"); then
    echo "baseline-env: \"$REF\" is not a commit of this repository (NIGHTLY_BASELINE_REF)" >&2
    exit 2
fi
MODE=${NIGHTLY_BASELINE_DEPS:-full}
case "$MODE" in full|shared) ;; *)
    echo "baseline-env: NIGHTLY_BASELINE_DEPS is \"$MODE\"; use full or shared" >&2; exit 2;;
esac
PYTHON=${NIGHTLY_PYTHON:-python3}
CACHE=${NIGHTLY_CACHE:-$ROOT/.rushhour/nightly}
DIR=$CACHE/$SHA
COMMAND=$DIR/bin/rushhour
mkdir -p "$CACHE"

exec 9>"$DIR.lock"
flock 9  # two jobs building the same commit wait for each other

if [ -f "$DIR/ready-$MODE" ] && [ -x "$COMMAND" ]; then
    echo "$COMMAND"
    exit 0
fi

echo "baseline-env: building the environment of $REF ($SHA, $MODE dependencies) in $DIR" >&2
rm -rf "$DIR/venv" "$DIR/bin" "$DIR"/ready-*
git -C "$ROOT" worktree prune
if [ ! -e "$DIR/src/.git" ]; then
    rm -rf "$DIR/src"
    git -C "$ROOT" worktree add --detach --force "$DIR/src" "$SHA" >&2
fi

# A ref whose folders install under the one `rushhour` namespace (it has setup.py) is read through
# links named as installed; an older ref's folders are top-level packages themselves.
if [ -f "$DIR/src/setup.py" ]; then
    mkdir -p "$DIR/ns/rushhour"
    for folder in kernel reference_server traffic_models scenarios experiments reports; do
        ln -sfn "$DIR/src/$folder" "$DIR/ns/rushhour/$folder"
    done
    SRC_PATH="$DIR/ns" ENTRY=rushhour.scenarios.cli.main
else
    SRC_PATH="$DIR/src" ENTRY=scenarios.cli.main
fi

if [ "$MODE" = shared ]; then
    SHARED=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    "$PYTHON" -m venv --without-pip "$DIR/venv"
    SITE=$("$DIR/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    # Plain path lines: the ref's source first, then the shared packages. The .pth files inside
    # the shared directory (this working tree's editable install among them) are not read.
    printf '%s\n%s\n' "$SRC_PATH" "$SHARED" >"$SITE/rushhour-baseline.pth"
else
    "$PYTHON" -m venv "$DIR/venv"
    "$DIR/venv/bin/python" -m pip install -q --upgrade pip >&2
    "$DIR/venv/bin/python" -m pip install -q -e "$DIR/src[${NIGHTLY_BASELINE_EXTRAS:-cpu}]" >&2
fi

mkdir -p "$DIR/bin"
cat >"$COMMAND" <<EOF
#!/usr/bin/env bash
# rushhour at $REF ($SHA), built by ci/baseline_env.sh
unset PYTHONPATH
cd "$DIR/src"
exec "$DIR/venv/bin/python" -I -m $ENTRY "\$@"
EOF
chmod +x "$COMMAND"
"$COMMAND" --version >&2
touch "$DIR/ready-$MODE"
echo "$COMMAND"
