/* cgroup.h — each command job in a cgroup v2 of its own (Slurm's
 * proctrack/cgroup model), so that no process of a job escapes its worker.
 *
 * Where cgroup v2 is mounted and this worker can write it (found from
 * /proc/self/mountinfo and the "0::" line of /proc/self/cgroup:
 * /sys/fs/cgroup on a unified box, /sys/fs/cgroup/unified in systemd's
 * hybrid layout), the worker makes a folder of its own under the cgroup it
 * runs in, and in it one cgroup for each command job that runs:
 *
 *     <worker's cgroup>/gpuflock-worker-<pid>/run-<n>/
 *
 * A job's cgroup is made ready ahead, with the spare guard that will run
 * the job born in it (worker/spare.h), so it cannot be named after a job
 * that is not known yet (and cgroup v2 refuses renames): the worker logs
 * which job runs in which (at debug level), and a job's processes show it
 * in /proc/PID/cgroup. Once the job is over and the cgroup is empty, it is
 * kept for the next one (a mkdir and an rmdir in cgroupfs cost about 70 us
 * of the worker's CPU on a 2-core VM).
 *
 * Both are made by the worker (root), so they and their files belong to
 * root (0755, files 0644): the job, which runs as its submitter, can
 * neither move itself out nor bring other processes in (moving a process
 * needs write access to cgroup.procs of the common ancestor too). The job's
 * guard is born inside the cgroup (the spare guards' fork server clones it
 * there), or, a guard spawned for its job, starts the command there while
 * it is still root: clone3 with CLONE_INTO_CGROUP either way, never a
 * write to cgroup.procs, which waits for an RCU grace period (8 ms p50 on a
 * 2-core VM, idle). From then on every process of the job is in the
 * cgroup, also one that left its process group or session (setsid). The worker signals each of them, kills them all (cgroup.kill,
 * Linux 5.14+; else SIGKILL to each listed pid, again until none is left)
 * and knows when none is left (cgroup.events: "populated 0").
 *
 * No controller is enabled: these cgroups track, signal and kill; they
 * limit nothing. That is why cgroup v2's no-internal-process rule (a
 * cgroup other than the root that has processes of its own cannot pass
 * domain controllers on to its children through cgroup.subtree_control)
 * does not get in the way: the worker (and the broker, when it started the
 * workers) stays in its own cgroup, beside its folder, and the job cgroups
 * are leaves. Limiting a job's memory or CPU this way would first need the
 * worker's own processes moved into a leaf of their own (Slurm puts
 * slurmstepd in a "slurm" leaf beside the job's "user" leaf for that
 * reason): not done.
 *
 * A folder whose worker is gone (its jobs should have died with it: their
 * guards kill the job cgroup when the worker dies) is emptied, processes
 * and all, and removed by the next worker's gf_cgroup_open. */
#ifndef GF_CGROUP_H
#define GF_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gf_cgroup gf_cgroup;   /* the worker's folder */
typedef struct gf_jobcg gf_jobcg;     /* the cgroup of one run of a job */

/* The folder of the cgroup v2 that the "0::" line of self_cgroup (the text
 * of /proc/self/cgroup) names, found through the cgroup2 mounts listed in
 * mountinfo (the text of /proc/self/mountinfo). Returns it (the caller
 * frees), or NULL with why filled (no cgroup2 mount, no "0::" line, a
 * cgroup outside every mount). */
char *gf_cgroup_locate(const char *mountinfo, const char *self_cgroup, char *why, size_t len);

/* The worker's folder under its own cgroup, made now and proven (a child
 * process is moved into a cgroup made in it), after emptying and removing
 * the folders of workers that are gone. NULL with why filled where cgroup
 * v2 is not there or not writable for us. */
gf_cgroup *gf_cgroup_open(char *why, size_t len);

/* Remove the folder (its job cgroups are gone by then) and free. */
void gf_cgroup_destroy(gf_cgroup **self_p);

/* The folder's path (borrowed). */
const char *gf_cgroup_path(const gf_cgroup *self);

/* Does the kernel have cgroup.kill (Linux 5.14+)? */
bool gf_cgroup_has_kill(const gf_cgroup *self);

/* An empty cgroup in the folder for the next job (run-<n>): the one kept
 * from an earlier job, else a new one. NULL with why filled when it cannot
 * be made. The folder outlives it. */
gf_jobcg *gf_jobcg_new(gf_cgroup *folder, char *why, size_t len);

/* Its path (borrowed). */
const char *gf_jobcg_path(const gf_jobcg *self);

/* An O_PATH descriptor of its folder (borrowed): what CLONE_INTO_CGROUP
 * takes. */
int gf_jobcg_fd(const gf_jobcg *self);

/* Send sig to each process in it. Returns how many were signalled. */
int gf_jobcg_signal(gf_jobcg *self, int sig);

/* SIGKILL every process in it: through cgroup.kill, else to each listed
 * pid (one round: call again while it is populated). Returns how many
 * processes it held just before. */
int gf_jobcg_kill(gf_jobcg *self);

/* Is any process left in it (cgroup.events)? An unreadable cgroup counts
 * as empty (it was removed under us: nothing of the job can be in it). */
bool gf_jobcg_populated(gf_jobcg *self);

/* Kill what is left and wait up to a second for it to go; then keep the
 * empty cgroup for gf_jobcg_new (one is kept) or remove it (one that will
 * not go is logged and left), and free. */
void gf_jobcg_destroy(gf_jobcg **self_p);

#endif
