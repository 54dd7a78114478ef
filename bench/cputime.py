"""cputime.py CMD [ARG...]: run CMD and print, on stderr, one line
"wall=S self=S children=S": its wall time, the CPU time (user + system) of
CMD's own process, and that of every process it waited for (its children,
theirs, ...), in seconds. The CPU times are read from /proc/PID/stat while
CMD is a zombie (waitid with WNOWAIT), the only moment both are final and
still apart. Linux only. CMD's exit status is passed on."""
import os
import sys
import time

tick = os.sysconf("SC_CLK_TCK")
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
wall = time.monotonic() - t0
with open(f"/proc/{pid}/stat") as f:
    fields = f.read().rsplit(")", 1)[1].split()
utime, stime, cutime, cstime = (int(x) / tick for x in fields[11:15])
_, status = os.waitpid(pid, 0)
print(f"wall={wall:.3f} self={utime + stime:.3f} children={cutime + cstime:.3f}", file=sys.stderr)
sys.exit(os.waitstatus_to_exitcode(status))
