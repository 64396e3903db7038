# class: hack/eq
# task: double
# expect: FAILED RUNTIME_ERROR
"""An object whose __eq__ exits 0 (in whichever process compares it)."""
import os
class Bail:
    def __eq__(self, other):
        os._exit(0)
def f(x):
    return Bail()
