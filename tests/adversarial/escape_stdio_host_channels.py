# class: escape/proc
# task: stdio
# expect: PASSED
"""stdio: a case's process is a fork of the job's program host. It tries every way to the host: descriptors it
could have inherited (3..1023), the host's pipes and sockets through /proc/<pid>/fd (its own stdout and stderr
pipes aside), the host's and the runner's memory, ptrace of the host. Any of them open means the attack worked:
the answer is then wrong. (The runner's own descriptors through /proc are escape_read_runner_proc's: under
gVisor, which does not honour non-dumpable there, its stdio opens, as it does for every step.)"""
import ctypes, os, stat

opened = []
for fd in range(3, 1024):
    try:
        os.fstat(fd)
        opened.append(f"fd {fd}")
    except OSError:
        pass
host = os.getppid()
own = {(os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in (0, 1, 2)}  # its own pipes, which the runner holds too
for pid in {host, 1}:
    try:
        for name in os.listdir(f"/proc/{pid}/fd") if pid == host else ():
            try:
                handle = os.open(f"/proc/{pid}/fd/{name}", os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            info = os.fstat(handle)
            os.close(handle)
            if (stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode)) and (info.st_dev, info.st_ino) not in own:
                opened.append(f"{pid} fd {name}")
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/mem", "r+b", buffering=0):
            opened.append(f"{pid} mem")
    except OSError:
        pass
try:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, host, None, None) == 0:  # PTRACE_ATTACH
        opened.append("ptrace")
        libc.ptrace(17, host, None, None)  # PTRACE_DETACH
except OSError:
    pass
n = int(input())
print(n * 2 + (1 if opened else 0))
