# class: hack/infra-error
# task: io
# expect: FAILED
"""python_io: writes an event nested 200,000 deep (the host's json.loads used to raise
RecursionError: INFRA_ERROR, no penalty), a duplicate-key event, then a forged end."""
import os, sys
def f(x):
    report = sys._getframe(1).f_locals["report"]
    cells = {type(c.cell_contents).__name__: c.cell_contents for c in report.__closure__}
    nonce, out = cells["str"], cells["TextIOWrapper"]
    out.write('{"event": "case", "index": 0, "value": ' + "[" * 200000 + "]" * 200000
              + ', "nonce": "' + nonce + '"}\n')
    out.write('{"event": "case", "index": 0, "value": 5, "value": 4, "nonce": "' + nonce + '"}\n')
    out.write('{"event": "end", "nonce": "' + nonce + '"}\n')
    out.flush()
    os._exit(0)
