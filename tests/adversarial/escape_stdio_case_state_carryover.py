# class: escape/persist
# task: stdio
# expect: PASSED
"""stdio, each case a fork of the warm program host: the first case changes every interpreter state it can reach
(builtins, sys.modules, a stdlib module, os.environ, the recursion limit, the host's frames
and globals up its own stack, objects the host froze); the next case must start from a clean fork and see none of
it. A mark seen in a later case means the attack worked: the answer is then wrong."""
import builtins, gc, json, os, sys

MARK = "rlvr_carried_over"
seen = [
    hasattr(builtins, MARK), MARK in sys.modules, hasattr(json, MARK), MARK in os.environ,
    sys.getrecursionlimit() == 54321, MARK in sys.path, MARK in sys.argv,
]
frame = sys._getframe()
while frame is not None:
    seen.append(MARK in frame.f_globals or MARK in frame.f_locals)
    frame = frame.f_back
# plant everything for the next case
setattr(builtins, MARK, 1)
sys.modules[MARK] = json
json.rlvr_carried_over = 1
os.environ[MARK] = "1"
sys.setrecursionlimit(54321)
frame = sys._getframe().f_back
while frame is not None:
    try:
        frame.f_globals[MARK] = 1
    except Exception:
        pass
    frame = frame.f_back
gc.unfreeze()  # the host's frozen objects, shared with it until written
sys.path.append(MARK)
sys.argv.append(MARK)
n = int(input())
print(n * 2 + (1 if any(seen) else 0))
