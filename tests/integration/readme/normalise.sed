# normalise.sed — what truly varies from one run of a README example to the
# next, put in one form on both sides (sed -E; tests/integration/readme_examples.sh
# applies it to the README's lines and to what the command printed). Paths
# and the user's name are mapped before, on the printed side only. Everything
# not named here is compared as it stands, spacing included.

# A process id: exec's "is held by pid 4121", locks' "pid 4121 exclusive".
s/\<pid [0-9]+\>/pid PID/g

# A log line's clock and process: "14:36:11.040 gpuflock[16265] warn: ...".
s/^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} ([a-z-]+)\[[0-9]+\] /HH:MM:SS.mmm \1[PID] /

# How long a recording took: "30.0 s of audio in 0.4 s ->".
s/ of audio in [0-9]+\.[0-9] s / of audio in T s /g

# queue's run time, its last column (gf_fmt_duration: "0.5s", "28s", "12m04s",
# "1h02m"), with a diarize job's percentage after it.
s/ ([0-9]+h[0-9]{2}m|[0-9]+m[0-9]{2}s|[0-9]+s|[0-9]+\.[0-9]s)( [0-9]+%)?$/ TIME\2/

# workers' PID column (printed "%7d", right after the 18 characters of STATE).
s/^([ 0-9]{4} .{18} ) *[0-9]+ /\1    PID /

# A CPU card's identity names this machine's cores and memory.
s/ cpu, [0-9]+ cores?, [0-9]+(\.[0-9]+)? GiB, / cpu, N cores, M GiB, /

# How a worker supervises its jobs depends on the machine (a cgroup v2 it may
# manage, else process groups: docs/operations.md, "Job supervision").
s/^( +)supervision: (cgroup \/[^ ]+\/gpuflock-worker-[0-9]+|process group: a process that calls setsid escapes)$/\1supervision: SUPERVISION/
