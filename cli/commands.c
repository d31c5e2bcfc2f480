/* commands.c — the table of gpuflock subcommands (see cli.h).
 * One line per subcommand (name, entry point, summary, reads no
 * configuration); keep it in the order `gpuflock help` shows. */
#include "cli/cli.h"

#include <string.h>

/* Subcommand entry points, defined in cli/cmd_<name>.c. */
int gf_cmd_models(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_version(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_submit(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_run(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_queue(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_history(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_purge(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_show(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_wait(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_cancel(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_hold(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_release(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_requeue(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_drain(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_resume(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_logs(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_workers(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_der(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_evidence(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_exec(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_locks(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_cluster(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_plan(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_qualify(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_diarize(int argc, char **argv, gf_cli_ctx *cli);

const gf_cli_command gf_cli_commands[] = {
    { "exec", gf_cmd_exec, "run a command holding card locks (no broker needed)", false },
    { "locks", gf_cmd_locks, "show who holds which card", false },
    { "models", gf_cmd_models, "check a models directory: models check DIR", false },
    { "version", gf_cmd_version, "print the version", true },
    { "submit", gf_cmd_submit, "queue a job (or --array N, --file LIST); print its id", false },
    { "run", gf_cmd_run, "run a job through the queue, streaming its output", false },
    { "queue", gf_cmd_queue, "list pending and running jobs (--all: ended too)", false },
    { "history", gf_cmd_history, "ended jobs' accounting, like sacct (--csv); --user, --state, --since", false },
    { "show", gf_cmd_show, "everything about one job", false },
    { "wait", gf_cmd_wait, "wait for jobs to end; exit status of the first failure", false },
    { "cancel", gf_cmd_cancel, "cancel jobs (a running job's process group is killed)", false },
    { "hold", gf_cmd_hold, "keep pending jobs from starting until released", false },
    { "release", gf_cmd_release, "let held jobs start again", false },
    { "requeue", gf_cmd_requeue, "send running jobs back to the queue (checkpointed where they can)", false },
    { "drain", gf_cmd_drain, "take a card out of service: no new jobs, yieldable jobs yield (root)", false },
    { "resume", gf_cmd_resume, "put a drained card back in service (root)", false },
    { "purge", gf_cmd_purge, "remove ended jobs and their spool files from the job store (root)", false },
    { "logs", gf_cmd_logs, "a job's captured output (-f: follow)", false },
    { "workers", gf_cmd_workers, "the cards, their workers and jobs", false },
    { "der", gf_cmd_der, "diarization error rate of a hypothesis RTTM against a reference", true },
    { "plan", gf_cmd_plan, "the route of every layer boundary on a card (--gpu N | --card SPEC)", false },
    { "qualify", gf_cmd_qualify, "measure own kernels on a CUDA card, write evidence records", false },
    { "evidence", gf_cmd_evidence, "check the evidence tables, remove orphan records (evidence check|prune [DIR])", true },
    { "cluster", gf_cmd_cluster, "cluster saved segmentation + embeddings into speaker turns (RTTM)", false },
    { "diarize", gf_cmd_diarize, "speaker turns (RTTM) for recordings (--local: in this process)", false },
    { NULL, NULL, NULL, false },
};

const gf_cli_command *gf_cli_find(const char *name)
{
    for (const gf_cli_command *c = gf_cli_commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}
