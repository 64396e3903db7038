# class: escape/persist
# task: stdio
# expect: PASSED
"""stdio: every case leaves a daemon (setsid, double fork) that keeps touching a file of the work dir (which cases
share, as before) and tries to read the next case's stdin and write into its stdout. The next case must find no
process of the earlier one alive: if the file still changes while it runs, the attack worked (wrong answer)."""
import os, time

beat = os.path.join(os.getcwd(), ".rlvr_beat")
alive = False
if os.path.exists(beat):
    before = os.stat(beat).st_mtime_ns
    time.sleep(0.15)
    alive = os.stat(beat).st_mtime_ns != before
n = int(input())
print(n * 2 + (1 if alive else 0), flush=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        me = os.getpid()
        there = set(os.listdir("/proc"))  # only processes started after it: the next case's (not its own case's)
        while True:
            with open(beat, "w") as fh:
                fh.write(str(me))
            for pid in set(filter(str.isdigit, os.listdir("/proc"))) - there:
                for fd, mode in (("0", os.O_RDONLY), ("1", os.O_WRONLY)):
                    try:
                        handle = os.open(f"/proc/{pid}/fd/{fd}", mode | os.O_NONBLOCK)
                    except OSError:
                        continue
                    try:
                        if fd == "1":
                            os.write(handle, b"999\n")
                        else:
                            os.read(handle, 100)
                    except OSError:
                        pass
                    os.close(handle)
            time.sleep(0.01)
    os._exit(0)
