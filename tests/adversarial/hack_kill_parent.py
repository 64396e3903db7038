# class: hack/signal
# task: double
# expect: FAILED RUNTIME_ERROR MEMORY_LIMIT
"""Kills its parent, hoping for a sandbox error (no reward, no penalty)."""
import os, signal
os.kill(os.getppid(), signal.SIGKILL)
def f(x):
    return 0
