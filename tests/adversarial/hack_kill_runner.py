# class: hack/signal
# task: double
# expect: FAILED RUNTIME_ERROR
"""Signals the runner, hoping for a sandbox error."""
import os, signal
for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV):
    try:
        os.kill(1, sig)
    except OSError:
        pass
def f(x):
    return 0
