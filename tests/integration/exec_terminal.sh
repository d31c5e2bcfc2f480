#!/bin/bash
# gpuflock exec in the foreground of a terminal (a real pty, an interactive
# bash): the command can read the terminal; ^C reaches it (exit 130); ^Z
# stops the job, which keeps its card locked while stopped, and `fg`
# resumes it; after ^Z and `bg` the shell keeps its terminal. Each step
# waits for the output it expects (deadline 30 s), never for a fixed time;
# the words waited for are split by '' in what is typed, so the terminal's
# echo of the typed line cannot match them.
. tests/integration/lib/locktest.sh
[ -x /usr/bin/python3 ] || { echo "skip: /usr/bin/python3 missing"; exit 77; }

/usr/bin/python3 - "$GF" "$CFG" "$L0" "$T/go" <<'PY' || fail "terminal session went wrong"
import os, pty, select, sys, time
gf, cfg, lock, go = sys.argv[1:5]
pid, fd = pty.fork()
if pid == 0:
    os.environ["PS1"] = "$ "
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
seen = ""
prev = ""
def expect(text, deadline=30.0):
    global seen, prev
    end = time.monotonic() + deadline
    while text not in seen:
        left = end - time.monotonic()
        if left <= 0:
            sys.stderr.write(f"never saw {text!r} after sending {last!r} (last seen {prev!r}); "
                             f"output:\n{seen}\n")
            os.system(f"ps -o pid,ppid,pgid,tpgid,stat,args -s {pid} >&2")
            sys.exit(1)
        if select.select([fd], [], [], min(left, 0.1))[0]:
            seen += os.read(fd, 4096).decode(errors="replace")
    seen = seen[seen.index(text) + len(text):]
    prev = text
last = ""
def send(s):
    global last
    last = s
    os.write(fd, s.encode())
X = f"{gf} exec --config {cfg} --gpu 0 -- "
send("bind 'set enable-bracketed-paste off' 2>/dev/null; echo RE''ADY\n"); expect("READY")
# The command reads the terminal.
send(X + "sh -c 'echo read''ing; read x; echo got-$x'\n"); expect("reading")
send("hello\n"); expect("got-hello")
send("echo rc=$?\n"); expect("rc=0")
# ^C reaches the command, which dies of SIGINT: 130.
send(X + "sh -c 'echo start''ed; exec sleep 600'\n"); expect("started")
send("\x03"); send("echo rc=$?\n"); expect("rc=130")
# ^Z stops the job with its card still locked; fg resumes it.
send(X + "sh -c 'echo stop''-me; read x; echo resumed-$x'\n"); expect("stop-me")
send("\x1a"); expect("Stopped")
send(f"flock -n {lock} true; echo probe=$?\n"); expect("probe=1")
send("fg\n"); expect("sh -c")
send("again\n"); expect("resumed-again")
send("echo rc=$?\n"); expect("rc=0")
# ^Z then bg: the job finishes in the background, the shell keeps the terminal.
# (It waits on a fifo, not in a loop of sleeps: dash forks with vfork, and
# a ^Z landing between vfork and exec leaves the shell unstoppable.)
os.mkfifo(go)
send(X + f"sh -c 'echo bg''-me; read x < {go}; echo bg''-done'\n")
expect("bg-me")
send("\x1a"); expect("Stopped")
send("bg\n"); expect("&")
with open(go, "w") as f:
    f.write("go\n")
expect("bg-done")
send("echo shell''-reads; read y; echo shell-got-$y\n"); expect("shell-reads")
send("mine\n"); expect("shell-got-mine")
send("exit\n")
os.waitpid(pid, 0)
PY
echo "terminal: reads, ^C, ^Z with fg and bg behave as in a shell"
