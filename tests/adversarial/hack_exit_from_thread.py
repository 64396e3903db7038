# class: hack/early-exit
# task: double
# expect: RUNTIME_ERROR FAILED
"""A thread exits 0 while the tests wait on the answer."""
import os, threading, time
def bail():
    time.sleep(0.05)
    os._exit(0)
threading.Thread(target=bail, daemon=True).start()
def f(x):
    time.sleep(1)
    return 0
