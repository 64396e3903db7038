# class: escape/proc
# task: double
# expect: PASSED
"""Kernel knobs under /proc cannot be written."""
BLOCKED = True
for path in ("/proc/sysrq-trigger", "/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches",
             "/proc/self/oom_score_adj_not_there"):
    try:
        with open(path, "w") as fh:
            fh.write("1")
        if not path.endswith("_not_there"):
            BLOCKED = False
    except OSError:
        pass
def f(x):
    return 2 * x if BLOCKED else 0
