"""The comparisons of ``exact_types``: equality and ``in`` with every element's type counting.

Standard library only.
"""


def same(left, right):
    """Equality with exact types at every position (``exact_types``): 1 is not 1.0 nor True, a subclass is not
    its base; in a list, tuple, dict (keys too: {1: x} is not {True: x} nor {1.0: x}), set or frozenset every
    element's type counts, and the same in the marker subclasses of a candidate's subclassed containers."""
    if type(left) is not type(right):
        return False
    if isinstance(left, (list, tuple)):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict):
        if len(left) != len(right):
            return False
        keys = {k: k for k in dict.keys(right)}  # right's own key objects, found by equality with left's
        for k, v in dict.items(left):
            other = keys.get(k, _MISSING_KEY)
            if other is _MISSING_KEY or not same(k, other) or not same(v, dict.__getitem__(right, other)):
                return False
        return True
    if isinstance(left, (set, frozenset)):
        if len(left) != len(right):
            return False
        items = {b: b for b in right}
        return all(same(a, items.get(a, _MISSING_KEY)) for a in left)
    return left == right


_MISSING_KEY = object()


def same_in(item, container):
    """``item in container`` with ``same`` for the elements (``exact_types``): True is not in [1, 2], 1.0 not
    in {1: x}; a substring must be of the string's own type; other containers (the completion's objects,
    ranges) answer as ``in`` does."""
    if isinstance(container, (list, tuple, set, frozenset)):
        return any(same(item, element) for element in container)
    if isinstance(container, dict):
        return any(same(item, key) for key in dict.keys(container))
    if isinstance(container, (str, bytes)):
        return type(item) is type(container) and item in container
    return item in container

