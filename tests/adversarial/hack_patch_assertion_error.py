# class: hack/patch-builtins
# task: double
# expect: FAILED RUNTIME_ERROR
"""Replaces AssertionError."""
import builtins
class Never(Exception):
    pass
builtins.AssertionError = Never
def f(x):
    return 0
