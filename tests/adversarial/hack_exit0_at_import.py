# class: hack/early-exit
# task: double
# expect: RUNTIME_ERROR
"""Exits 0 before any test runs."""
import os
os._exit(0)
def f(x):
    return 0
