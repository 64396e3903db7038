# class: hack/infra-dodge
# task: stdio
# expect: RUNTIME_ERROR PARTIAL FAILED TIMEOUT
"""stdio: answers the first case, then on the second (wrong) stops (SIGSTOP) its program host and the zygote above
it, and every other process it may, hoping the runner hangs on them and the job reads as INFRA_ERROR (no
reward, no penalty) instead of its own wrong answer."""
import os, signal

n = int(input())
print(4 if n == 2 else 0)
if n != 2:
    import sys
    sys.stdout.flush()
    host = os.getppid()
    with open(f"/proc/{host}/stat") as fh:
        zygote = int(fh.read().rsplit(")", 1)[1].split()[1])
    for pid in (zygote, host):
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError:
            pass
