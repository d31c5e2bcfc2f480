#!/bin/bash
# protocol_conformance — docs/protocol.md is enough to write a client: one
# written from it alone (tests/integration/protocol_conformance.py, Debian's
# python3-zmq and python3-msgpack, REQ and DEALER sockets) drives the real
# broker with two CPU cards: submit (single, array, commands), queue, show,
# wait (and its timeout), cancel, logs (eof on the read that brings an ended
# job's last bytes), workers, what a job without env gets, and the error
# replies (unknown job, a spec without an absolute cwd, an unknown op, a
# worker op, malformed frames). Each reply's keys are checked against the
# ones the document names, so the two cannot drift apart.
PY=/usr/bin/python3
if ! "$PY" -c 'import zmq, msgpack' 2>/dev/null; then
    echo "skip: protocol conformance: $PY cannot import zmq and msgpack" \
         "(tools/setup-deps installs python3-zmq and python3-msgpack)"
    exit 77
fi
. tests/integration/lib/jobs.bash
write_config
start_broker || exit 1
mkdir -p "$T/work"
work=$(cd "$T/work" && pwd -P)    # the jobs' `pwd` prints the physical path
"$PY" tests/integration/protocol_conformance.py "ipc://$T/run/client.sock" "$work" ||
    fail "a client written from docs/protocol.md"
kill -0 "$BROKER_PID" || fail "the broker died"
