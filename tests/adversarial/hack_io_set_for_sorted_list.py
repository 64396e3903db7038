# class: hack/compare
# task: iosorted
# expect: FAILED
"""python_io: returns a set where the task asks for the sorted distinct values; the harness used
to sort sets before the host compared them."""
def f(xs):
    return set(xs)
