# class: escape/signal
# task: double
# expect: PASSED
# expect-gvisor: RUNTIME_ERROR  (gVisor delivers SIGKILL/SIGSTOP to PID 1: the runner dies, twice, the completion loses)
"""Signals the runner (PID 1) with everything; it must carry on."""
import os, signal
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
            signal.SIGALRM, signal.SIGPIPE, signal.SIGKILL, signal.SIGSTOP):
    try:
        os.kill(1, sig)
    except OSError:
        pass
os.kill(1, signal.SIGCONT)
def f(x):
    return 2 * x
