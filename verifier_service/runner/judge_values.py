"""Values on the pipe between the judge and the candidate process (``judge.py`` tells the whole split).

Raw JSON for exact None, bool, int, float and str; a tagged dict for everything else:
{"t": list|tuple|set|frozenset|dict|bytes|complex|ref, "v": ..., "sub": <subclass name>}.

Standard library only.
"""

import json
import sys

MAX_DEPTH = 100
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)  # big ints cross the pipe as JSON numbers (decimal text)
loads = json.loads
dumps = json.dumps


_CONTAINERS = ((list, "list"), (tuple, "tuple"), (set, "set"), (frozenset, "frozenset"))
_SCALARS = ((int, "int"), (float, "float"), (str, "str"), (bytes, "bytes"), (complex, "complex"))


def encode(value, refer, depth=0):
    """``value`` as wire data, read with the built-in types' own methods; other objects go to ``refer``."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deeply")
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return int.__index__(value)
    if t is float:
        return float.__float__(value)
    for base, tag in _SCALARS:
        if isinstance(value, base):
            if base is int:
                raw = int(int.__repr__(value))
            elif base is float:
                raw = float(float.__repr__(value))
            elif base is str:
                raw = str.__str__(value)
            elif base is bytes:
                raw = bytes.hex(value)
            else:
                raw = [complex.real.__get__(value), complex.imag.__get__(value)]
            out = {"t": tag, "v": raw}
            if t is not base:
                out["sub"] = type_name(t)
            return out
    for base, tag in _CONTAINERS:
        if isinstance(value, base):
            items = list(base.__iter__(value))
            out = {"t": tag, "v": [encode(v, refer, depth + 1) for v in items]}
            if t is not base:
                out["sub"] = type_name(t)
            return out
    if isinstance(value, dict):
        out = {"t": "dict", "v": [[encode(k, refer, depth + 1), encode(v, refer, depth + 1)]
                                  for k, v in dict.items(value)]}
        if t is not dict:
            out["sub"] = type_name(t)
        return out
    return refer(value)


def type_name(t):
    try:
        name = type.__dict__["__name__"].__get__(t)
        return str.__str__(name) if isinstance(name, str) else "?"
    except BaseException:  # noqa: BLE001 - whatever the candidate's metaclass does
        return "?"

