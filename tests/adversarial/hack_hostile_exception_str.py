# class: hack/exceptions
# task: double
# expect: FAILED RUNTIME_ERROR
"""An exception whose __str__ / __repr__ exit 0 when the harness describes it."""
import os
class Bad(Exception):
    def __str__(self):
        os._exit(0)
    def __repr__(self):
        os._exit(0)
def f(x):
    raise Bad()
