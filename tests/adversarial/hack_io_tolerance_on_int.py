# class: hack/compare
# task: iofloat
# expect: FAILED PARTIAL
"""python_io: a float within the tolerance of an integer expected value (the tolerance used to
apply once the answer was a float); the integer case must be exact."""
def f(x):
    return x / 2 * 1.0000001 if x != 4 else 2.0000001
