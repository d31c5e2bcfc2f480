#!/usr/bin/python3
"""protocol_conformance.py — a client written from docs/protocol.md alone,
with Debian's python3-zmq and python3-msgpack, against the real gpuflockd
that tests/integration/protocol_conformance.sh started.

Usage: protocol_conformance.py ENDPOINT DIR
  ENDPOINT  the broker's client endpoint (ipc://.../client.sock)
  DIR       an absolute folder of the test's, the jobs' working directory

Every reply is decoded strictly (msgpack raw=False: UTF-8 strings; no
trailing bytes) and checked against the reply shapes the document names:
the header, the exact keys of each reply, the keys of the job, spec,
worker and card records, the error codes. A key the broker adds or drops,
or a code that changes meaning, fails here until the document says it.
Exits 0 when everything holds; an AssertionError names what did not."""

import os
import pwd
import sys
import time

import msgpack
import zmq

ENDPOINT, DIR = sys.argv[1], sys.argv[2]
VERSION = 1
TIMEOUT_MS = 15000

# docs/protocol.md, "Error codes"
EINVAL, EIO, ENOENT, EPROTO, ETOOBIG, EPERM, ESTATE, ENOSPC = -1, -2, -3, -7, -8, -9, -13, -14

# docs/protocol.md, "Replies" and "Records": the keys each one has. Keys
# written only when set (docs/protocol.md, "Versioning") are optional.
REPLY_KEYS = {
    "ids": {"ids"},
    "jobs": {"jobs"},
    "codes": {"codes", "message"},
    "log": {"data", "offset", "eof"},
    "workers_list": {"workers"},
    "error": {"code", "message"},
}
REPLY_OPTIONAL = {"codes": {"ids"}}   # a cancel by filter names its jobs
SPEC_KEYS = {"kind", "argv", "cwd", "env", "req", "gpu", "gpus", "mode", "proof", "priority",
             "time", "after", "name", "no_requeue", "array_index"}
SPEC_OPTIONAL = {"yield_sig", "yield_grace_s", "hold", "diar", "notify"}
JOB_KEYS = {"id", "spec", "state", "uid", "gid", "user", "attempts", "submitted", "started",
            "ended", "cards", "exit", "signal", "cpu_user_ms", "cpu_sys_ms", "maxrss_kb",
            "reason", "out", "err", "stats"}
JOB_OPTIONAL = {"progress_done", "progress_total", "held", "held_by", "yields"}
WORKER_KEYS = {"device", "card", "state", "pid", "jobs", "plan", "supervision", "last_seen"}
WORKER_OPTIONAL = {"drain", "drain_reason", "stats"}
CARD_KEYS = {"index", "kind", "name", "uuid", "cc_major", "cc_minor", "sm_count", "total_mem",
             "l2_bytes", "smem_optin", "driver_version"}
STATES = {"pending", "running", "done", "failed", "cancelled"}
WORKER_STATES = {"starting", "offline", "idle", "busy (exclusive)", "busy (shared)"}
# what a job whose spec has no env gets (docs/protocol.md, "A job's directory and environment")
BARE_ENV = {"PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "GPUFLOCK_DEVICE",
            "GPUFLOCK_LOCK_FILE", "GPUFLOCK_JOB_ID", "GPUFLOCK_RESTART_COUNT"}

ctx = zmq.Context()


def sock(kind=zmq.REQ):
    s = ctx.socket(kind)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RCVTIMEO, TIMEOUT_MS)
    s.connect(ENDPOINT)
    return s


def has_keys(what, rec, required, optional=frozenset()):
    keys = set(rec)
    missing, extra = required - keys, keys - required - set(optional)
    assert not missing and not extra, f"{what}: keys missing {sorted(missing)}, " \
                                      f"not in the document {sorted(extra)}"


def decode(frame, what):
    """One reply body: the header first, then the keys its op has."""
    m = msgpack.unpackb(frame, raw=False)   # strict UTF-8, no trailing bytes
    assert isinstance(m, dict), f"{what}: reply is not a map: {m!r}"
    keys = list(m)
    assert keys[:2] == ["v", "op"], f"{what}: reply does not start with v, op: {keys}"
    assert m["v"] == VERSION, f"{what}: reply version {m['v']}"
    op = m["op"]
    assert op in REPLY_KEYS, f"{what}: reply op {op!r} is not a client reply"
    has_keys(f"{what}: reply '{op}'", {k: v for k, v in m.items() if k not in ("v", "op")},
             REPLY_KEYS[op], REPLY_OPTIONAL.get(op, set()))
    if op == "error":
        assert isinstance(m["code"], int) and m["code"] < 0, f"{what}: code {m['code']!r}"
        assert isinstance(m["message"], str) and m["message"], f"{what}: no message"
    if op == "jobs":
        for j in m["jobs"]:
            check_job(what, j)
    if op == "workers_list":
        for w in m["workers"]:
            check_worker(what, w)
    return m


def raw_call(s, frames, what):
    s.send_multipart(frames)
    try:
        reply = s.recv_multipart()
    except zmq.Again:
        raise AssertionError(f"{what}: no reply within {TIMEOUT_MS} ms")
    return reply


def call(op, what=None, s=None, **keys):
    """A request (header first, then its keys) on a REQ socket; the reply."""
    what = what or op
    msg = {"v": VERSION, "op": op}
    msg.update(keys)
    own = s is None
    s = s or sock()
    try:
        reply = raw_call(s, [msgpack.packb(msg, use_bin_type=True)], what)
    finally:
        if own:
            s.close()
    assert len(reply) == 1, f"{what}: {len(reply)} frames in the reply"
    return decode(reply[0], what)


def expect(op, want_op, what, **keys):
    m = call(op, what, **keys)
    assert m["op"] == want_op, f"{what}: reply {m['op']}, want {want_op}: {m}"
    return m


def expect_error(op, code, words, what, **keys):
    m = expect(op, "error", what, **keys)
    assert m["code"] == code, f"{what}: code {m['code']}, want {code}: {m['message']}"
    assert words in m["message"], f"{what}: message {m['message']!r} does not say {words!r}"
    return m


def check_job(what, j):
    has_keys(f"{what}: job", j, JOB_KEYS, JOB_OPTIONAL)
    has_keys(f"{what}: job {j['id']}'s spec", j["spec"], SPEC_KEYS, SPEC_OPTIONAL)
    assert j["state"] in STATES, f"{what}: state {j['state']!r}"
    assert isinstance(j["id"], int) and j["id"] > 0, f"{what}: id {j['id']!r}"


def check_worker(what, w):
    has_keys(f"{what}: worker", w, WORKER_KEYS, WORKER_OPTIONAL)
    has_keys(f"{what}: worker {w['device']}'s card", w["card"], CARD_KEYS)
    assert w["state"] in WORKER_STATES, f"{what}: worker state {w['state']!r}"


def spec(argv, **more):
    """The least a command job needs: argv and an absolute cwd."""
    s = {"argv": argv, "cwd": DIR}
    s.update(more)
    return s


def submit(what, sp, **keys):
    return expect("submit", "ids", what, spec=sp, **keys)["ids"]


def wait(ids, what, timeout_ms=0):
    return expect("wait", "jobs", what, ids=ids, timeout_ms=timeout_ms)["jobs"]


def show(i, what):
    jobs = expect("show", "jobs", what, id=i)["jobs"]
    assert len(jobs) == 1 and jobs[0]["id"] == i, f"{what}: show {i} gave {jobs}"
    return jobs[0]


def read_log(i, stream="out", offset=0, what="logs"):
    return expect("logs", "log", what, id=i, stream=stream, offset=offset)


def whole_log(i, stream, what):
    """Read to eof, as a client does; the replies."""
    at, replies = 0, []
    while True:
        r = read_log(i, stream, at, what)
        assert isinstance(r["data"], bytes), f"{what}: data is {type(r['data'])}, not bin"
        assert r["offset"] == at + len(r["data"]), f"{what}: offset {r['offset']} after {at}"
        at = r["offset"]
        replies.append(r)
        if r["eof"]:
            return replies
        assert len(replies) < 1000, f"{what}: no eof after 1000 reads"


def until(what, cond, seconds=15):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {seconds} s")


def main():
    me = pwd.getpwuid(os.getuid()).pw_name

    # workers: both CPU cards, idle
    ws = expect("workers", "workers_list", "workers")["workers"]
    assert sorted(w["device"] for w in ws) == [0, 1], f"workers: {ws}"
    for w in ws:
        assert w["card"]["kind"] == "cpu" and w["card"]["index"] == w["device"], w
        assert w["state"] == "idle" and w["jobs"] == [] and w["pid"] > 0, w
        assert w["last_seen"] > 0, w

    # submit, single: the least a spec needs (argv, cwd); it runs in cwd
    env = ["PATH=/usr/bin:/bin", "GF_PROBE=first", "GF_PROBE=probe-value",
           "CUDA_VISIBLE_DEVICES=mine", "NOEQUALS", "=nameless"]
    probe = ('pwd; echo "$GF_PROBE $CUDA_VISIBLE_DEVICES $PATH"; '
             "env | grep -c -e NOEQUALS -e '^='; echo err >&2")
    [one] = submit("submit single", spec(["sh", "-c", probe], env=env, name="probe"))
    assert isinstance(one, int) and one > 0, one
    [j] = wait([one], "wait single")
    assert j["state"] == "done" and j["exit"] == 0 and j["signal"] == 0, j
    assert j["uid"] == os.getuid() and j["gid"] == os.getgid() and j["user"] == me, j
    assert j["attempts"] == 1 and len(j["cards"]) == 1 and j["cards"][0] in (0, 1), j
    assert 0 < j["submitted"] <= j["started"] <= j["ended"], j
    assert j["spec"]["cwd"] == DIR and j["spec"]["name"] == "probe", j["spec"]
    assert j["spec"]["array_index"] == -1 and j["spec"]["env"] == [], j["spec"]   # wait: no env
    # logs: eof on the read that brings the last bytes
    rs = whole_log(one, "out", "logs of an ended job")
    assert len(rs) == 1, f"logs of an ended job: eof after {len(rs)} reads, not on the first"
    r = rs[0]
    card = j["cards"][0]
    assert r["data"] == f"{DIR}\nprobe-value {card} /usr/bin:/bin\n0\n".encode(), r
    assert r["eof"] is True, r
    # a read at the end of an ended job's file: nothing, eof again
    r = read_log(one, "out", r["offset"], "logs at the end")
    assert r["data"] == b"" and r["eof"] is True, r
    rs = whole_log(one, "err", "logs --stderr")
    assert len(rs) == 1, f"logs --stderr: eof after {len(rs)} reads, not on the first"
    r = rs[0]
    assert r["data"] == b"err\n" and r["eof"] is True, r
    assert read_log(one, what="logs, stream left out")["data"].startswith(DIR.encode())

    # show: the owner sees the environment as sent; the job's other keys
    s = show(one, "show")
    assert s["spec"]["env"] == env, s["spec"]["env"]
    assert s["spec"]["kind"] == "command" and s["spec"]["req"] == "any", s["spec"]
    assert s["spec"]["mode"] == "x" and s["spec"]["priority"] == 0, s["spec"]
    assert s["out"].endswith(f"/{one}.out") and s["err"].endswith(f"/{one}.err"), s

    # a job without env: the worker's few variables and nothing of anyone else's
    [bare] = submit("submit without env", spec(["env"]))
    [j] = wait([bare], "wait without env")
    assert j["state"] == "done", j
    out = b"".join(r["data"] for r in whole_log(bare, "out", "logs without env")).decode()
    names = {line.split("=", 1)[0] for line in out.splitlines()}
    assert names == BARE_ENV, f"a job without env got {sorted(names)}"
    assert "PATH=/usr/local/bin:/usr/bin:/bin" in out.splitlines(), out

    # a cwd the job cannot enter fails it (the broker does not look)
    [lost] = submit("submit into a missing folder", spec(["true"], cwd=DIR + "/missing"))
    [j] = wait([lost], "wait missing folder")
    assert j["state"] == "failed" and j["exit"] == 126, j
    err = b"".join(r["data"] for r in whole_log(lost, "err", "logs missing folder")).decode()
    assert err.startswith(f"gpuflock: cannot enter the directory {DIR}/missing: "), err

    # submit, array: N ids in index order, GPUFLOCK_ARRAY_INDEX 0..N-1
    arr = submit("submit array", spec(["sh", "-c", 'echo "$GPUFLOCK_ARRAY_INDEX"']), array=3)
    assert len(arr) == 3 and arr == sorted(set(arr)), arr
    jobs = wait(list(reversed(arr)), "wait array")
    assert [j["id"] for j in jobs] == list(reversed(arr)), "wait: jobs not in the order asked"
    for k, i in enumerate(arr):
        j = show(i, "show array job")
        assert j["state"] == "done" and j["spec"]["array_index"] == k, j
        assert read_log(i, what="logs array job")["data"] == f"{k}\n".encode()
    # submit, commands: one job per string, /bin/sh -c STRING
    cmds = submit("submit commands", spec(["/bin/sh"]), commands=["echo first", "exit 3"])
    assert len(cmds) == 2, cmds
    a, b = wait(cmds, "wait commands")
    assert a["spec"]["argv"] == ["/bin/sh", "-c", "echo first"], a["spec"]["argv"]
    assert a["state"] == "done" and a["spec"]["array_index"] == 0, a
    assert b["state"] == "failed" and b["exit"] == 3 and b["spec"]["array_index"] == 1, b

    # a big output: eof on the last reply with data, none before it
    [big] = submit("submit big", spec(["sh", "-c", "head -c 300007 /dev/zero | tr '\\0' x"]))
    wait([big], "wait big")
    rs = whole_log(big, "out", "logs of a big output")
    assert len(rs) >= 2 and all(not r["eof"] for r in rs[:-1]), [len(r["data"]) for r in rs]
    assert rs[-1]["eof"] and rs[-1]["data"], "eof came on an empty read"
    assert sum(len(r["data"]) for r in rs) == 300007

    # a running job: wait with a timeout answers with its state; logs say no eof
    [slow] = submit("submit slow", spec(["sh", "-c", "echo started; exec sleep 30"]))
    until("the slow job's output", lambda: read_log(slow, what="logs running")["data"])
    t0 = time.monotonic()
    [j] = wait([slow], "wait with a timeout", timeout_ms=300)
    assert j["state"] == "running" and time.monotonic() - t0 < 5, j
    r = read_log(slow, what="logs of a running job")
    assert r["data"] == b"started\n" and r["eof"] is False, r
    r = read_log(slow, offset=r["offset"], what="logs of a running job at its end")
    assert r["data"] == b"" and r["eof"] is False, r
    ws = expect("workers", "workers_list", "workers, busy")["workers"]
    busy = [w for w in ws if slow in w["jobs"]]
    assert len(busy) == 1 and busy[0]["state"] == "busy (exclusive)", ws

    # queue: live jobs only; all: the ended ones too; never an environment
    q = expect("queue", "jobs", "queue")["jobs"]
    assert [j["id"] for j in q] == [slow], f"queue: {[(j['id'], j['state']) for j in q]}"
    q = expect("queue", "jobs", "queue all", all=True)["jobs"]
    ids = [j["id"] for j in q]
    assert ids == sorted(ids) and {one, bare, lost, big, slow, *arr, *cmds} <= set(ids), ids
    assert all(j["spec"]["env"] == [] for j in q), "queue carried an environment"

    # queue's filter: every condition must hold; an unknown state is refused
    mine = os.getuid()
    q = expect("queue", "jobs", "queue filter", all=True,
               filter={"users": [mine], "states": ["failed"]})["jobs"]
    assert {j["id"] for j in q} == {lost, cmds[1]}, [(j["id"], j["state"]) for j in q]
    q = expect("queue", "jobs", "queue filter since", all=True,
               filter={"since": int(time.time() * 1000) + 3600000})["jobs"]
    assert [j["id"] for j in q] == [slow], q   # live jobs only: none ended in an hour's time
    q = expect("queue", "jobs", "queue filter cards", all=True, filter={"cards": [0, 1]},)["jobs"]
    assert slow in {j["id"] for j in q} and bare in {j["id"] for j in q}, q
    expect_error("queue", EINVAL, "unknown state 'finished'", "queue filter unknown state",
                 filter={"states": ["finished"]})
    expect_error("queue", EPROTO, "unknown key 'uid'", "queue filter unknown key",
                 filter={"uid": 0})

    # cancel by filter: the jobs it took in ids, a code each; ids and a filter not both
    [held] = submit("submit held", spec(["true"], hold=True, name="conformance-held"))
    m = expect("cancel", "codes", "cancel by filter", ids=[],
               filter={"name": "conformance-held"})
    assert m["ids"] == [held] and m["codes"] == [0], m
    m = expect("cancel", "codes", "cancel by filter, nothing", ids=[],
               filter={"name": "conformance-held"})
    assert m["codes"] == [] and "ids" not in m, m
    expect_error("cancel", EINVAL, "not both", "cancel by ids and filter", ids=[slow],
                 filter={"name": "x"})

    # purge: root only; the count in the message
    if mine == 0:
        m = expect("purge", "codes", "purge", before=1000)
        assert m["codes"] == [0] and m["message"].startswith("0 ended jobs"), m
    else:
        expect_error("purge", EPERM, "only root", "purge as a user", before=1000)

    # cancel: one code per id, in order
    m = expect("cancel", "codes", "cancel", ids=[slow, 999999, one])
    assert m["codes"] == [0, ENOENT, ESTATE], m
    assert m["message"] is None, m
    [j] = wait([slow], "wait cancelled")
    assert j["state"] == "cancelled" and j["reason"] == f"cancelled by {me}", j
    r = whole_log(slow, "out", "logs of a cancelled job")
    assert b"".join(x["data"] for x in r) == b"started\n" and r[-1]["data"], r
    m = expect("cancel", "codes", "cancel again", ids=[slow])
    assert m["codes"] == [ESTATE], m

    # error replies
    expect_error("show", ENOENT, "no job 999999", "show unknown", id=999999)
    expect_error("wait", ENOENT, "no job 999999", "wait unknown", ids=[one, 999999])
    expect_error("logs", ENOENT, "no job 999999", "logs unknown", id=999999)
    for bad, words in [({"argv": ["true"]}, "key 'spec.cwd': missing"),
                       ({"argv": ["true"], "cwd": None}, "key 'spec.cwd': missing"),
                       ({"argv": ["true"], "cwd": "rel/dir"},
                        "key 'spec.cwd': 'rel/dir' is not an absolute path"),
                       ({"argv": [], "cwd": DIR}, "empty command"),
                       ({"argv": ["true"], "cwd": DIR, "req": "gpu", "gpu": 7},
                        "no card 7"),
                       ({"argv": ["true"], "cwd": DIR, "after": [999999]}, "no job 999999")]:
        code = ENOENT if "after" in bad else EINVAL
        expect_error("submit", code, words, f"submit {bad}", spec=bad)
        expect_error("submit", code, words, f"submit {bad} as an array", spec=bad, array=5)
    expect_error("submit", EPROTO, "key 'spec': missing key 'argv'", "submit without argv",
                 spec={"cwd": DIR})
    expect_error("submit", EPROTO, "key 'spec.mode': unknown value 'both'", "bad enum",
                 spec=spec(["true"], mode="both"))
    expect_error("submit", EPROTO, "unknown key 'colour'", "unknown key",
                 spec=spec(["true"], colour="red"))
    expect_error("submit", ETOOBIG, "over the limit", "oversize argv string",
                 spec=spec(["echo", "a" * 70000]))
    expect_error("show", EPROTO, "key 'id'", "show with a string id", id="1")
    expect_error("format-disk", EPROTO, "unknown operation 'format-disk'", "unknown op")
    expect_error("heartbeat", EPROTO, "operation 'heartbeat' is not a client request",
                 "a worker op on the client socket")
    expect_error("ids", EPROTO, "operation 'ids' is not a client request",
                 "a reply sent as a request", ids=[1])
    # malformed frames, sent as bytes
    s = sock()
    for frame, words, what in [
            (b"\xc1", "", "not msgpack"),
            (msgpack.packb({"op": "queue", "v": 1}), "first key is not 'v'", "op before v"),
            (msgpack.packb({"v": 99, "op": "queue"}), "unsupported protocol version 99",
             "version 99"),
            (msgpack.packb({"v": 1, "op": "show", "id": 1})[:-1], "", "truncated"),
            (msgpack.packb({"v": 1, "op": "queue"}) + b"\x00", "trailing data", "trailing"),
            (b"", "empty message", "empty")]:
        [rep] = raw_call(s, [frame], what)
        m = decode(rep, what)
        assert m["op"] == "error" and m["code"] == EPROTO, f"{what}: {m}"
        assert words in m["message"], f"{what}: {m['message']!r} does not say {words!r}"
    s.close()

    # a DEALER: [empty][body] in, [empty][body] back; without the empty
    # frame, the reply comes without it; two body frames are refused
    d = sock(zmq.DEALER)
    body = msgpack.packb({"v": 1, "op": "show", "id": one})
    rep = raw_call(d, [b"", body], "dealer")
    assert len(rep) == 2 and rep[0] == b"" and decode(rep[1], "dealer")["op"] == "jobs", rep
    rep = raw_call(d, [body], "dealer without the empty frame")
    assert len(rep) == 1 and decode(rep[0], "dealer, no delimiter")["op"] == "jobs", rep
    rep = raw_call(d, [b"", body, body], "two bodies")
    m = decode(rep[-1], "two bodies")
    assert m["op"] == "error" and m["code"] == EPROTO, m
    assert "more than one body frame" in m["message"], m
    d.close()

    # the broker still serves, and nothing came of the refused submits
    q = expect("queue", "jobs", "queue at the end", all=True)["jobs"]
    assert {j["id"] for j in q} == set(ids) | {held}, "a refused submit made a job"
    print(f"ok: protocol conformance: {len(ids)} jobs through python3-zmq "
          f"{zmq.__version__} (libzmq {zmq.zmq_version()}) and msgpack "
          f"{'.'.join(map(str, msgpack.version))}")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
    finally:
        ctx.destroy(linger=0)
