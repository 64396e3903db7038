# class: escape/output-flood
# task: double
# expect: OUTPUT_LIMIT TIMEOUT
"""A child process floods stdout."""
import subprocess
subprocess.run(["yes", "flood"])
def f(x):
    return 2 * x
