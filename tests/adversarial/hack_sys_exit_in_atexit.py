# class: hack/early-exit
# task: double
# expect: FAILED RUNTIME_ERROR
"""sys.exit(0) from atexit."""
import atexit, sys
atexit.register(sys.exit, 0)
def f(x):
    return 0
