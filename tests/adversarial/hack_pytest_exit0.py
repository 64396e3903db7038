# class: hack/early-exit
# task: pytest
# expect: FAILED RUNTIME_ERROR
"""Exits 0 while pytest imports it."""
import os
os._exit(0)
def f(x):
    return 0
