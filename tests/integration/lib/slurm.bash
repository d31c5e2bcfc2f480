# slurm.bash — a private single-node Slurm for the tests and the benchmarks
# (sourced), as root: munged (the system key, created when missing),
# slurmctld and slurmd on this host, state, spool, logs and configuration in
# one folder. Two of them may run on one host (other engineers, other
# tests): each picks its own free ports and its own cluster name.
#
#   slurm_available            0 when slurmctld, slurmd, munged and srun exist
#   slurm_start DIR [GPUS]     start; GPUS > 0 declares that many fake "gpu"
#                              gres on the node (regular files DIR/dev/gpuN:
#                              Slurm hands out their indices in
#                              CUDA_VISIBLE_DEVICES; no device behind them).
#                              Extra slurm.conf lines may be put in
#                              SLURM_EXTRA (e.g. PlugStackConfig=...).
#                              Exports SLURM_CONF; returns non-zero with the
#                              reason on stderr when the node does not come up
#                              (77: no device nodes can be made here, a
#                              container without CAP_MKNOD: skip).
#   slurm_stop DIR             stop the two daemons of DIR (munged stays)
#
# Scheduling is eager (no batch delay) so the benchmarks see Slurm at its
# best; proctrack/linuxproc and task/none so that it runs in a container
# without cgroups.

slurm_available() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
        command -v munged >/dev/null && command -v srun >/dev/null
}

# A TCP port nobody listens on now (ss from iproute2, else /proc/net/tcp).
_slurm_free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 30000))
        if command -v ss >/dev/null; then
            ss -Htan "sport = :$p" 2>/dev/null | grep -q . && continue
        else
            grep -qi ":$(printf %04X "$p") " /proc/net/tcp 2>/dev/null && continue
        fi
        echo "$p"
        return
    done
}

slurm_start() {
    local dir=$1 gpus=${2:-0} host conf gres_line="" gres_types="" i
    slurm_available || { echo "slurm_start: slurm-wlm and munge are not installed" >&2; return 69; }
    mkdir -p "$dir/state" "$dir/spool" "$dir/dev" || return 1
    host=$(hostname -s)
    conf="$dir/slurm.conf"
    local ctld_port slurmd_port
    ctld_port=$(_slurm_free_port)
    slurmd_port=$(_slurm_free_port)
    [ "$slurmd_port" != "$ctld_port" ] || slurmd_port=$((ctld_port + 1))
    if [ "$gpus" -gt 0 ]; then
        gres_line="Gres=gpu:$gpus"
        gres_types="GresTypes=gpu"
        : >"$dir/gres.conf"
        for ((i = 0; i < gpus; i++)); do
            rm -f "$dir/dev/gpu$i"
            # a /dev/null: Slurm wants a device node behind each File=
            mknod "$dir/dev/gpu$i" c 1 3 2>/dev/null ||
                { echo "slurm_start: cannot make fake gpu device nodes here (mknod)" >&2; return 77; }
            echo "NodeName=$host Name=gpu File=$dir/dev/gpu$i" >>"$dir/gres.conf"
        done
    fi
    cat >"$conf" <<CONF
ClusterName=gf$$x$RANDOM
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,default_queue_depth=1000
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
KillWait=2
MessageTimeout=20
$gres_types
${SLURM_EXTRA:-}
NodeName=$host CPUs=$(nproc) $gres_line State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
    [ -f /etc/munge/munge.key ] || mungekey -c >/dev/null 2>&1 || true
    mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null || true
    pgrep -x munged >/dev/null || munged --force 2>/dev/null || true
    export SLURM_CONF=$conf
    slurmctld -c -f "$conf" || { echo "slurm_start: slurmctld failed (see $dir/slurmctld.log)" >&2; return 70; }
    slurmd -c -f "$conf" || { echo "slurm_start: slurmd failed (see $dir/slurmd.log)" >&2; return 70; }
    for _ in $(seq 300); do
        sinfo -h -o %t 2>/dev/null | grep -q idle && return 0
        sleep 0.1
    done
    echo "slurm_start: the node did not come up (see $dir/*.log)" >&2
    return 70
}

slurm_stop() {
    local dir=$1 p pid
    for p in slurmd slurmctld; do
        [ -f "$dir/$p.pid" ] || continue
        pid=$(cat "$dir/$p.pid")
        kill "$pid" 2>/dev/null || continue
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    done
}
