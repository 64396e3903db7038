# class: escape/output-flood
# task: double
# expect: OUTPUT_LIMIT
"""Endless stderr."""
import sys
while True:
    sys.stderr.write("y" * 65536)
def f(x):
    return 2 * x
