# class: escape/signal
# task: double
# expect: RUNTIME_ERROR MEMORY_LIMIT
"""kill(-1): every process it may signal (its judge included, never the runner)."""
import os, signal
os.kill(-1, signal.SIGKILL)
def f(x):
    return 2 * x
