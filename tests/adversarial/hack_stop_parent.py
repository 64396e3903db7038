# class: hack/signal
# task: double
# expect: TIMEOUT FAILED RUNTIME_ERROR
"""Stops its parent, hoping for a sandbox error."""
import os, signal
os.kill(os.getppid(), signal.SIGSTOP)
def f(x):
    return 0
