# class: hack/read-expected
# task: double
# expect: FAILED RUNTIME_ERROR
"""Reads the expected value from the calling test's code constants."""
import sys
def f(x):
    consts = [c for c in sys._getframe(1).f_code.co_consts if type(c) is int]
    return consts[consts.index(x) + 1] if x in consts and consts.index(x) + 1 < len(consts) else 0
