# class: hack/early-exit
# task: stdio
# expect: FAILED
"""stdio: exits 0 with no output."""
import os
os._exit(0)
