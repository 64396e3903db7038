# class: hack/early-exit
# task: double
# expect: RUNTIME_ERROR
"""SystemExit(0) from the tested function."""
def f(x):
    raise SystemExit(0)
