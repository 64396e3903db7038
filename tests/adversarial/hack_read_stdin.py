# class: hack/read-expected
# task: double
# expect: FAILED RUNTIME_ERROR
"""Reads whatever is left on stdin (the job) for the expected values."""
import os, re, sys
try:
    JOB = os.read(0, 1 << 20).decode(errors="replace")
except OSError:
    JOB = ""
def f(x):
    m = re.search(r"f\(" + re.escape(repr(x)) + r"\) == (-?\d+)", JOB)
    return int(m.group(1)) if m else 0
