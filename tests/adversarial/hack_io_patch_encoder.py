# class: hack/patch-harness
# task: io
# expect: FAILED RUNTIME_ERROR
"""python_io: patches the harness's encoder (it can only report a value, and the value is wrong)."""
import sys
for module in list(sys.modules.values()):
    if hasattr(module, "_encode"):
        module._encode = lambda value, depth=0: "pwned"
def f(x):
    return 0
