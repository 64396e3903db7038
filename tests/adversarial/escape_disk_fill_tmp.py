# class: escape/disk-fill
# task: double
# expect: OUTPUT_LIMIT RUNTIME_ERROR
"""Fills the writable /tmp."""
with open("/tmp/fill", "wb") as fh:
    while True:
        fh.write(b"x" * (1 << 20))
def f(x):
    return 2 * x
