# class: hack/infra-dodge
# task: stdio
# expect: RUNTIME_ERROR PARTIAL FAILED
"""stdio: on the second case (wrong answer) leaves a child that, once the case's process is gone, kills its
program host and the zygote (before the host's sweep reaches it), so that the case's own exit comes with the
sandbox broken: hoping the wrong answer is voided into INFRA_ERROR, or judged against nothing."""
import os, signal, sys

n = int(input())
print(4 if n == 2 else 0)
sys.stdout.flush()
if n != 2:
    host = os.getppid()
    with open(f"/proc/{host}/stat") as fh:
        zygote = int(fh.read().rsplit(")", 1)[1].split()[1])
    if os.fork() == 0:
        os.setsid()
        while os.getppid() != 1 and os.path.exists(f"/proc/{os.getppid()}"):
            pass
        for pid in (host, zygote):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)
    os._exit(0)
