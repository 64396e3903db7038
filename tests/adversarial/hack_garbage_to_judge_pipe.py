# class: hack/forge-report
# task: double
# expect: FAILED RUNTIME_ERROR
"""Writes would-be answers to every fd before the tests ask."""
import os
for fd in range(3, 64):
    try:
        os.write(fd, b'{"value": 4}\n{"value": 10}\n{"value": -6}\n')
    except OSError:
        pass
def f(x):
    return 0
