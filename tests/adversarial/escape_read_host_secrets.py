# class: escape/host-files
# task: double
# expect: PASSED
"""Host and service files ({REPO}: the service's checkout) are not readable."""
BLOCKED = True
for path in ("/etc/shadow", "/root/.ssh/id_rsa", "/root/.bash_history", "/etc/docker/daemon.json",
             "{REPO}/verifier_service/config.py", "{REPO}/pyproject.toml", "/proc/kcore"):
    try:
        with open(path, "rb") as fh:
            fh.read(1)
        BLOCKED = False
    except OSError:
        pass
def f(x):
    return 2 * x if BLOCKED else 0
