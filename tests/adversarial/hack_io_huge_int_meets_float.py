# class: hack/infra-error
# task: iofloat
# expect: FAILED
"""python_io: an int too large for a float where a float is expected (the host's math.isclose
used to raise OverflowError: INFRA_ERROR, no penalty)."""
def f(x):
    return 10 ** 400
