# class: hack/compare
# task: io
# expect: PARTIAL
"""python_io: reports the first case (which it can solve) through the harness's own report
function, then a forged end, and exits before the other cases: the missing cases must fail."""
import os, sys
def f(x):
    report = sys._getframe(1).f_locals["report"]
    report(event="case", index=0, value=2 * x, duration_s=0.0)
    report(event="end")
    os._exit(0)
