# class: hack/early-exit
# task: double
# expect: RUNTIME_ERROR
"""sys.exit(0) before any test runs."""
import sys
sys.exit(0)
def f(x):
    return 0
