#!/bin/bash
# Metrics against the real thing: Debian's prometheus scrapes gpuflockd's
# endpoint (metrics.listen on the loopback) and prometheus-node-exporter's
# textfile collector (metrics.textfile), both on free loopback ports with
# their own configuration and storage in the test's folder, while jobs run
# on two CPU cards; then the test asks Prometheus's HTTP API for series and
# checks them against the jobs it ran:
#   - jobs submitted, ended by state (done, failed, cancelled), the run and
#     queue-wait histograms (counts, a sum, a wait behind a card held by
#     flock(1)), results by outcome, a yield (gpuflock requeue of a
#     yieldable job), a lock wait on a card held outside gpuflock, a worker
#     restart (SIGKILL), busy seconds, the cards' states, the store's
#     commits; a diarize job's untimed launches per stage and route equal
#     its own statistics (`show`);
#   - the same numbers through node_exporter's textfile collector;
#   - every query of deploy/grafana-gpuflock.json is taken by Prometheus;
#   - no job name in any label (one with quotes and braces is submitted),
#     fewer than 400 series;
#   - the endpoint itself: its content type, 404 elsewhere; 40 idle
#     connections held open (past its limit of 32) do not stop the broker
#     from taking and running a job;
#   - a listen address off the loopback is refused (exit 78), an address
#     in use too (exit 70).
# Skips (exit 77) without prometheus; the node_exporter part is reported
# skipped without prometheus-node-exporter.
. tests/integration/lib/jobs.bash
PROM=$(command -v prometheus || true)
NODE=$(command -v prometheus-node-exporter || command -v node_exporter || true)
[ -n "$PROM" ] || { echo "skip: metrics: prometheus is not installed (Debian: apt-get install prometheus)"; exit 77; }
command -v curl >/dev/null || { echo "skip: metrics: curl is not installed"; exit 77; }
PY=/usr/bin/python3
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; cleanup' EXIT

free_port() {
    $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
P_GF=$(free_port); P_PROM=$(free_port); P_NODE=$(free_port)
mkdir -p "$T/textfile" "$T/models"
write_config
cat >>"$CFG" <<YAML
models_dir: $T/models
metrics:
  listen: 127.0.0.1:$P_GF
  textfile: $T/textfile/gpuflock.prom
  textfile_interval_s: 1
YAML
start_broker || exit 1
grep -q "metrics at http://127.0.0.1:$P_GF/metrics" "$T/broker.log" || fail "no word of the endpoint"

# ---- Prometheus and node_exporter, on the loopback, in $T ----------------
targets="['127.0.0.1:$P_GF']"
cat >"$T/prom.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: gpuflock
    static_configs: [{targets: $targets}]
YAML
if [ -n "$NODE" ]; then
    "$NODE" --web.listen-address="127.0.0.1:$P_NODE" --collector.disable-defaults \
        --collector.textfile --collector.textfile.directory="$T/textfile" >"$T/node.log" 2>&1 &
    PIDS+=($!)
    cat >>"$T/prom.yml" <<YAML
  - job_name: node
    static_configs: [{targets: ['127.0.0.1:$P_NODE']}]
YAML
else
    echo "skip: metrics: the textfile collector (prometheus-node-exporter is not installed)"
fi
"$PROM" --config.file="$T/prom.yml" --storage.tsdb.path="$T/prom-data" \
    --web.listen-address="127.0.0.1:$P_PROM" >"$T/prom.log" 2>&1 &
PIDS+=($!)

# query EXPR: the sum of the instant vector's values, "none" when empty
query() {
    $PY - "$P_PROM" "$1" <<'PYEOF'
import json, sys, urllib.parse, urllib.request
port, expr = sys.argv[1], sys.argv[2]
url = "http://127.0.0.1:%s/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": expr}))
try:
    r = json.load(urllib.request.urlopen(url, timeout=5))
except Exception as e:
    print("error: %s" % e); sys.exit(0)
res = r["data"]["result"]
if r["data"]["resultType"] == "scalar":
    print(float(res[1])); sys.exit(0)
print("none" if not res else repr(sum(float(x["value"][1]) for x in res)))
PYEOF
}
# expect EXPR OP VALUE: wait (up to 20 s: scrapes are 1 s apart) until true
expect() {
    local got=
    for _ in $(seq 80); do
        got=$(query "$1")
        case $got in none|error*) ;; *)
            $PY -c "import sys; sys.exit(0 if float('$got') $2 float('$3') else 1)" && return 0 ;;
        esac
        sleep 0.25
    done
    fail "Prometheus: $1 = $got, want $2 $3"
}
expect 'up{job="gpuflock"}' == 1

# ---- the jobs -----------------------------------------------------------
sleeps=$(gf submit --array 4 -- sleep 1.5) || fail "submit the sleeps"
f1=$(gf submit -- sh -c 'exit 3') && f2=$(gf submit -- sh -c 'exit 3') || fail "submit the failures"
held=$(gf submit --hold -- true) || fail "submit the held job"
gf cancel "$held" >/dev/null || fail "cancel the held job"
named=$(gf submit --name 'evil"name\n{x="1"}' -- true) || fail "submit the named job"
gf wait $sleeps >/dev/null; gf wait "$f1" "$f2" "$named" >/dev/null 2>&1
# card 0 held outside gpuflock: the next job there waits for flock(1)
flock "$T/lock/gpu0.lock" sleep 2 &
holder=$!
sleep 0.3
locked=$(gf submit --gpu 0 -- true) || fail "submit behind the outside holder"
# a yieldable job asked back once (gpuflock requeue): it yields, then runs to its end
y=$(gf submit --gpu 1 --yieldable -- sh -c '[ "$GPUFLOCK_RESTART_COUNT" -gt 0 ] && exit 0; trap "exit 85" USR1; touch '"$T"'/y.up; while :; do sleep 0.1; done') ||
    fail "submit the yieldable job"
for _ in $(seq 100); do [ -e "$T/y.up" ] && break; sleep 0.05; done
[ -e "$T/y.up" ] || fail "the yieldable job did not start"
gf requeue "$y" >/dev/null || fail "requeue the yieldable job"
gf wait "$locked" "$y" >/dev/null || fail "the locked or the yielded job"
wait $holder
n_command=10; n_done=7; n_ran=9
# a diarize job on card 1, weight-free (no models): its devstats are untimed on a CPU card
SAMPLE=../shared/data/audio/sample.wav
n_diar=0
if [ -f "$SAMPLE" ]; then
    cp "$SAMPLE" "$T/a.wav"
    gf diarize --gpu 1 "$T/a.wav" >"$T/diar.out" 2>"$T/diar.err" || fail "diarize: $(cat "$T/diar.err")"
    dj=$(sed -n 's|^.*/a.wav: job \([0-9]*\)$|\1|p' "$T/diar.err")
    [ -n "$dj" ] || fail "no diarize job id: $(cat "$T/diar.err")"
    n_diar=1
else
    echo "skip: metrics: a diarize job's device statistics (no $SAMPLE)"
fi

# ---- what Prometheus has ------------------------------------------------
expect 'gpuflock_jobs_submitted_total{job="gpuflock",kind="command"}' == $n_command
expect 'gpuflock_jobs_submitted_total{job="gpuflock",kind="diarize"}' == $n_diar
expect 'gpuflock_jobs_ended_total{job="gpuflock",state="done",kind="command"}' == $n_done
expect 'gpuflock_jobs_ended_total{job="gpuflock",state="failed",kind="command"}' == 2
expect 'gpuflock_jobs_ended_total{job="gpuflock",state="cancelled",kind="command"}' == 1
expect 'gpuflock_jobs_ended_total{job="gpuflock",state="done",kind="diarize"}' == $n_diar
expect 'gpuflock_job_run_seconds_count{job="gpuflock",kind="command"}' == $n_ran
expect 'gpuflock_job_run_seconds_sum{job="gpuflock",kind="command"}' '>=' 6          # 4 x 1.5 s
expect 'gpuflock_job_run_seconds_bucket{job="gpuflock",kind="command",le="1"}' == $((n_ran - 4))
expect 'gpuflock_job_queue_wait_seconds_count{job="gpuflock",kind="command"}' == $n_ran
# at least one job waited over a second: the one behind flock(1)
expect 'sum(gpuflock_job_queue_wait_seconds_count{job="gpuflock",kind="command"}) - sum(gpuflock_job_queue_wait_seconds_bucket{job="gpuflock",kind="command",le="1"})' '>=' 1
expect 'sum(gpuflock_job_run_seconds_bucket{job="gpuflock",kind="command",le="+Inf"}) - sum(gpuflock_job_run_seconds_count{job="gpuflock",kind="command"})' == 0
expect 'sum(gpuflock_card_results_total{job="gpuflock",outcome="success"})' == $((n_done + n_diar))
expect 'sum(gpuflock_card_results_total{job="gpuflock",outcome="failure"})' == 2
expect 'gpuflock_card_results_total{job="gpuflock",card="1",outcome="yielded"}' == 1
expect 'gpuflock_card_yields_total{job="gpuflock",card="1"}' == 1
expect 'gpuflock_card_lock_waits_total{job="gpuflock",card="0"}' '>=' 1
expect 'gpuflock_card_outside_holder_waits_total{job="gpuflock",card="0"}' '>=' 1
expect 'gpuflock_card_outside_holder_waits_total{job="gpuflock",card="1"}' == 0
expect 'sum(gpuflock_card_busy_seconds_total{job="gpuflock"})' '>=' 4                 # 6 card-seconds of sleep, sampled
expect 'sum(gpuflock_jobs{job="gpuflock"})' == 0
expect 'gpuflock_card_state{job="gpuflock",state="idle"}' == 2
expect 'gpuflock_store_commit_seconds_count{job="gpuflock"}' '>=' $((n_command + n_diar))
expect 'gpuflock_store_sync_seconds_count{job="gpuflock"}' '>=' 1
expect 'gpuflock_store_behind{job="gpuflock"}' == 0
expect 'gpuflock_build_info{job="gpuflock"}' == 1
if [ "$n_diar" = 1 ]; then
    # every devstats.<stage>.<route>.unavailable of the job's own statistics
    gf show "$dj" | sed -n 's/^stat devstats\.\(.*\)\.\([^.]*\)\.unavailable: \([0-9]*\)$/\1 \2 \3/p' >"$T/rows"
    [ -s "$T/rows" ] || fail "job $dj has no untimed devstats: $(gf show "$dj" | grep devstats)"
    while read -r stage route want; do
        expect "gpuflock_card_device_untimed_total{job=\"gpuflock\",card=\"1\",stage=\"$stage\",route=\"$route\",why=\"unavailable\"}" == "$want"
    done <"$T/rows"
fi

# a worker killed: restarted, counted
w0=$(cat "$T/run/worker0.pid")
kill -KILL "$w0"
for _ in $(seq 200); do
    [ "$(gf workers 2>/dev/null | grep -cE ' (idle|busy) ')" = 2 ] && [ "$(cat "$T/run/worker0.pid" 2>/dev/null)" != "$w0" ] && break
    sleep 0.05
done
expect 'gpuflock_card_worker_restarts_total{job="gpuflock",card="0"}' == 1
expect 'gpuflock_card_worker_restarts_total{job="gpuflock",card="1"}' == 0

# the textfile, through node_exporter
if [ -n "$NODE" ]; then
    expect 'up{job="node"}' == 1
    expect 'gpuflock_jobs_ended_total{job="node",state="done",kind="command"}' == $n_done
    expect 'gpuflock_jobs_submitted_total{job="node",kind="command"}' == $n_command
    expect 'node_textfile_scrape_error' == 0
    ls -a "$T/textfile" | grep -q tmp && fail "a temporary file left in the textfile folder"
fi

# every query of deploy/grafana-gpuflock.json is one Prometheus takes, and
# finds series for (those over a rate window may still be empty this soon)
$PY - "$P_PROM" deploy/grafana-gpuflock.json 2>"$T/dash.err" <<'PYEOF' || fail "the dashboard's queries: $(cat "$T/dash.err")"
import json, sys, urllib.parse, urllib.request
port, path = sys.argv[1], sys.argv[2]
bad = []
for panel in json.load(open(path))["panels"]:
    for t in panel["targets"]:
        expr = t["expr"].replace("$instance", ".+")
        url = "http://127.0.0.1:%s/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": expr}))
        try:
            r = json.load(urllib.request.urlopen(url, timeout=5))
            if r.get("status") != "success":
                bad.append("%s: %s" % (expr, r))
        except Exception as e:
            bad.append("%s: %s" % (expr, e))
if bad:
    sys.stderr.write("\n".join(bad) + "\n"); sys.exit(1)
PYEOF
expect 'sum(gpuflock_jobs{job="gpuflock",instance=~".+"})' == 0    # the dashboard's selector finds them

# ---- labels: bounded, no job names -------------------------------------
curl -s "http://127.0.0.1:$P_GF/metrics" >"$T/scrape" || fail "curl the endpoint"
grep -q evil "$T/scrape" && fail "a job name in the metrics: $(grep evil "$T/scrape")"
grep -q root "$T/scrape" && fail "a user name in the metrics"
expect 'count({__name__=~"gpuflock_.*",job="gpuflock"})' '<' 400
curl -s -D "$T/headers" -o /dev/null "http://127.0.0.1:$P_GF/metrics"
grep -qi "^content-type: text/plain; version=0.0.4; charset=utf-8" "$T/headers" || fail "content type: $(cat "$T/headers")"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P_GF/")
[ "$code" = 404 ] || fail "GET / answered $code, want 404"

# ---- idle connections do not hold up the broker --------------------------
$PY - "$P_GF" "$T/held" <<'PYEOF' &
import socket, sys, time
socks = []
for _ in range(40):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect(("127.0.0.1", int(sys.argv[1]))); s.send(b"GET /metrics HTTP/1.1\r\n")
    except OSError:
        pass
    socks.append(s)
open(sys.argv[2], "w").close()
time.sleep(6)
PYEOF
PIDS+=($!)
for _ in $(seq 100); do [ -e "$T/held" ] && break; sleep 0.05; done
start=$(date +%s%N)
j=$(gf submit -- true) && timeout 5 "$GF" wait --config "$CFG" "$j" >/dev/null || fail "a job while 40 connections hang on the endpoint"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$ms" -lt 3000 ] || fail "a job took $ms ms while connections hung on the endpoint"

# ---- what the broker refuses ------------------------------------------
stop_broker
refused() {   # STATUS WORDS YAML-LINES...
    local want=$1 words=$2; shift 2
    write_config
    printf '%s\n' "$@" >>"$CFG"
    "$GFD" --config "$CFG" --foreground 2>"$T/refused.log" &
    local pid=$! t=0
    while kill -0 $pid 2>/dev/null && [ $t -lt 100 ]; do sleep 0.05; t=$((t + 1)); done
    kill -0 $pid 2>/dev/null && { kill $pid; wait $pid; fail "started with: $*"; }
    wait $pid; local rc=$?
    [ $rc = "$want" ] || fail "exit $rc with '$*', want $want: $(cat "$T/refused.log")"
    grep -q "$words" "$T/refused.log" || fail "no '$words' in: $(cat "$T/refused.log")"
}
refused 78 "is not a loopback address" "metrics:" "  listen: 0.0.0.0:$P_GF"
refused 70 "cannot serve there" "metrics:" "  listen: 127.0.0.1:$P_PROM"    # Prometheus has it
refused 70 "its folder $T/none" "metrics:" "  textfile: $T/none/gpuflock.prom"
via=${NODE:+ and through the textfile collector}
echo "ok: Prometheus read the numbers of the jobs from gpuflockd$via; labels bounded, no names; refusals"
