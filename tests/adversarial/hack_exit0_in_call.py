# class: hack/early-exit
# task: double
# expect: RUNTIME_ERROR
"""os._exit(0) from the tested function."""
import os
def f(x):
    os._exit(0)
