# class: escape/output-flood
# task: double
# expect: OUTPUT_LIMIT
"""Endless stdout."""
import sys
while True:
    sys.stdout.write("x" * 65536)
def f(x):
    return 2 * x
