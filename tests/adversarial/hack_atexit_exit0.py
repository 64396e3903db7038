# class: hack/early-exit
# task: double
# expect: FAILED RUNTIME_ERROR
"""An atexit handler that exits 0 (whatever the tests said)."""
import atexit, os
atexit.register(lambda: os._exit(0))
def f(x):
    return 0
