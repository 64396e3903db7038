# class: escape/read
# task: stdiochecker
# expect: PASSED
"""A spec with a checker: the candidate's program looks for the checker and the jury's answers everywhere it can
read (the work dir and its parent, /tmp, /dev/shm, HOME, its environment and stdin, every process's command line
and environment) and for any process of the checker's job alive beside it. They must be in none of them: the
checker runs in a job of its own, after this one. Found: the attack worked (a wrong answer); else the right one."""
import os

# (each split in two, so this program's own source, solution.py, does not hold them)
MARKERS = tuple(a + b for a, b in ((b"def ", b"check("), (b"two non-negative ", b"integers expected"),
                                   (b"stdio_checker", b"_main"), (b"checker", b".py"), (b"4 ", b"4\n")))
stdin = os.read(0, 1 << 16)
found = [m for m in MARKERS if m in stdin]
for key, value in os.environ.items():
    found += [key for m in MARKERS if m in (key + "=" + value).encode()]
for root in {os.getcwd(), os.path.dirname(os.getcwd()), "/tmp", "/dev/shm", os.environ.get("HOME", "/")}:
    for path, dirs, files in os.walk(root):
        for name in files:
            try:
                with open(os.path.join(path, name), "rb") as fh:
                    data = fh.read(1 << 20)
            except OSError:
                continue
            found += [os.path.join(path, name) for m in MARKERS if m in data]
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    for part in ("cmdline", "environ"):
        try:
            with open(f"/proc/{pid}/{part}", "rb") as fh:
                data = fh.read(1 << 16)
        except OSError:
            continue
        found += [f"/proc/{pid}/{part}" for m in MARKERS if m in data]
n = int(stdin.split()[0])
print(n, 1 if found else 0)  # n + 1 is wrong; n + 0 is right
