#!/usr/bin/env python3
"""What bubblewrap itself adds to spawning a command, flag by flag (P18 in
BENCHMARKS.md): each line is posix_spawn + waitpid of `bwrap ... /bin/true`,
timed in two interleaved halves, against spawning /bin/true directly.
Usage: scripts/bench-bwrap.py [runs per line, default 300]. Needs bwrap."""
import os, time, statistics, shlex, shutil, subprocess, sys
F="--die-with-parent --new-session --unshare-user --disable-userns --cap-drop ALL --unshare-uts --hostname roost-sandbox --uid 65534 --gid 65534 --ro-bind / /"
cmds=[
 ("true, spawned directly", "/bin/true"),
 ("bwrap: a mount namespace, / read-only", "bwrap --ro-bind / / /bin/true"),
 ("+ a user namespace", "bwrap --unshare-user --ro-bind / / /bin/true"),
 ("Roost's identity flags (user ns, no caps, uid 65534, new session)", f"bwrap {F} /bin/true"),
 ("+ a network namespace only", f"bwrap --unshare-net {F} /bin/true"),
 ("+ ipc, pid, cgroup namespaces (no net)", f"bwrap --unshare-ipc --unshare-pid --unshare-cgroup-try {F} /bin/true"),
 ("+ --unshare-all", f"bwrap --unshare-all {F} /bin/true"),
 ("--unshare-all + --dev /dev", f"bwrap --unshare-all {F} --dev /dev /bin/true"),
 ("--unshare-all + --proc /proc", f"bwrap --unshare-all {F} --proc /proc /bin/true"),
 ("--unshare-all + --dev, --proc, --tmpfs /tmp (Roost's namespaces and mounts)", f"bwrap --unshare-all {F} --dev /dev --proc /proc --tmpfs /tmp /bin/true"),
 ("the same without the network namespace", f"bwrap --unshare-ipc --unshare-pid --unshare-cgroup-try {F} --dev /dev --proc /proc --tmpfs /tmp /bin/true"),
]
n=int(sys.argv[1]) if len(sys.argv)>1 else 300
bwrap=shutil.which("bwrap")
if not bwrap:
    sys.exit("bwrap is not installed")
# A line whose bwrap refuses its flags would time an error: each must run.
for name,c in cmds:
    r=subprocess.run(shlex.split(c),capture_output=True,text=True)
    if r.returncode != 0:
        sys.exit(f"{name}: {c} exits {r.returncode}: {r.stderr.strip()}")
devnull=os.open(os.devnull, os.O_RDWR)
fa=[(os.POSIX_SPAWN_DUP2, devnull, 1),(os.POSIX_SPAWN_DUP2, devnull, 2)]
res={}
for rnd in range(2):
  for name,c in cmds:
    argv=shlex.split(c); path=argv[0] if argv[0].startswith('/') else bwrap
    ts=[]
    for i in range(n//2+10):
        t=time.perf_counter(); pid=os.posix_spawn(path, argv, os.environ, file_actions=fa); os.waitpid(pid,0); ts.append(time.perf_counter()-t)
    res.setdefault(name,[]).extend(ts[10:])
base=statistics.median(res[cmds[0][0]])
for name,_ in cmds:
    m=statistics.median(res[name]); print(f"| {name} | {m*1000:.2f} ms | +{(m-base)*1000:.2f} ms |")
