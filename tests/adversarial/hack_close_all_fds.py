# class: hack/fds
# task: double
# expect: FAILED RUNTIME_ERROR
"""Closes every fd (the report pipe, stdout) to turn the failure into a sandbox error."""
import os
os.closerange(0, 4096)
def f(x):
    return 0
