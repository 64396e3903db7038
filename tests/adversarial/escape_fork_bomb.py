# class: escape/fork-bomb
# task: double
# expect: TIMEOUT RUNTIME_ERROR MEMORY_LIMIT
# needs: pids
"""Forks until the process limit; the forks keep trying."""
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
def f(x):
    return 2 * x
