#!/bin/sh
# Runs the test suite while 4 CPU-bound processes run beside it, as on a loaded build
# machine: `sh tests/load.sh` from the workspace root; extra arguments go to `cargo test`
# (e.g. `sh tests/load.sh -p doca-tests --test cc_cross_process`; default: --workspace).
# The hogs are stopped however the run ends (success, failure, Ctrl-C).
set -u
HOGS=${HOGS:-4}
pids=""
stop() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	pids=""
}
trap stop EXIT
trap 'stop; exit 130' INT TERM
i=0
while [ "$i" -lt "$HOGS" ]; do
	sh -c 'while :; do :; done' &
	pids="$pids $!"
	i=$((i + 1))
done
echo "load.sh: $HOGS CPU-bound processes running beside the tests (pids$pids)" >&2
if [ "$#" -eq 0 ]; then
	set -- --workspace
fi
cargo test "$@"
status=$?
stop
exit "$status"
