# class: hack/patch-builtins
# task: double
# expect: FAILED RUNTIME_ERROR
"""Monkeypatches isinstance, issubclass and len."""
import builtins
builtins.isinstance = lambda obj, cls: True
builtins.issubclass = lambda a, b: True
real_type = type
builtins.len = lambda obj: 0
def f(x):
    return 0
