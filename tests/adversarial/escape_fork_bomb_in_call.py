# class: escape/fork-bomb
# task: double
# expect: TIMEOUT RUNTIME_ERROR MEMORY_LIMIT
# needs: pids
"""Forks from inside the tested function."""
import os
def f(x):
    while True:
        try:
            os.fork()
        except OSError:
            pass
