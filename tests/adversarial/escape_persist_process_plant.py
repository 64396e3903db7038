# class: escape/persist
# task: double
# expect: PASSED
# phase: 1
"""Leaves daemons behind (setsid, double fork, a shell ignoring signals)."""
import subprocess, os
subprocess.Popen(["sleep", "1000"], start_new_session=True)
subprocess.Popen(["sh", "-c", 'trap "" TERM HUP INT; while true; do touch /tmp/.rlvr_alive; sleep 0.05; done'],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time
        while True:
            time.sleep(1)
    os._exit(0)
def f(x):
    return 2 * x
