# class: hack/infra-dodge
# task: stdio
# expect: TIMEOUT RUNTIME_ERROR PARTIAL FAILED
"""stdio: on the second case, a slow (wrong) answer: it runs past its time limit, and a child of it, ignoring
nothing it can, keeps killing the program host and the zygote the moment the runner asks for the case's end,
hoping the TIMEOUT reads as INFRA_ERROR or as a pass of what it printed."""
import os, signal, sys, time

n = int(input())
print(n * 2)
sys.stdout.flush()
if n != 2:
    host = os.getppid()
    with open(f"/proc/{host}/stat") as fh:
        zygote = int(fh.read().rsplit(")", 1)[1].split()[1])
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(2.9)
        for pid in (host, zygote):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)
    while True:
        pass
