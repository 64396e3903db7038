# class: escape/host-files
# task: double
# expect: PASSED
"""No path to the Docker (or containerd) socket."""
import os, socket
BLOCKED = True
for path in ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock"):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        BLOCKED = False
    except OSError:
        pass
def f(x):
    return 2 * x if BLOCKED else 0
