# class: hack/names
# task: helper
# expect: FAILED RUNTIME_ERROR
"""Redefines the prompt's helper the check calls (encode) as the identity, and answers with the identity: the
check's name must never resolve to the completion's (only the entry point is the completion's)."""
def encode(s):
    return s
def decode(s):
    return s
