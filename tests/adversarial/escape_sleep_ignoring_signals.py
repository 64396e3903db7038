# class: escape/cpu
# task: double
# expect: TIMEOUT
"""Ignores every catchable signal and sleeps."""
import signal, time
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):
    signal.signal(sig, signal.SIG_IGN)
time.sleep(10 ** 6)
def f(x):
    return 2 * x
