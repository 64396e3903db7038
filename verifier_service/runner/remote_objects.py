"""The judge's handles on the completion's objects, which live in the candidate process (``judge.py``).

Standard library only.
"""


def _write_back(candidate, changed, args, kwargs):
    """The new contents of the judge's list, dict and set arguments that the call changed in place
    (``candidate_process._changed``): the judge's own objects are changed to them, as a function in the tests'
    process would have changed them. Only an argument the judge passed as a plain list, dict or set takes
    contents of its own type; anything else the candidate sends is an error of the call."""
    if type(changed) is not dict:
        raise TypeError("the completion's process sent unreadable changed arguments")
    for key, wire in changed.items():
        target = args[int(key)] if type(key) is str and key.isdigit() and int(key) < len(args) else kwargs.get(key)
        new = candidate.value(wire) if type(wire) is dict and wire.get("t") != "unsendable" else None
        if type(target) is list and type(new) is list:
            target[:] = new
        elif type(target) in (dict, set) and type(new) is type(target):
            target.clear()
            target.update(new)
        else:
            raise TypeError(f"argument {key} was changed by the call into something that cannot be sent back "
                            f"(only a list, dict or set the tests passed is changed in place)")


class Remote:
    """An object of the completion's, living in the candidate process; the judge only holds its handle.

    Calls, attributes, ``len``, iteration, indexing and truth are asked of the candidate
    (they are its class's behaviour, which is what the tests test). Nothing else is
    decided by it, nor by the handle: a handle never has more power than a built-in
    value the candidate could have returned instead. It is unequal to every judge
    value; two handles are equal when the judge finds their classes the same and their
    instance data equal (``__eq__`` below: the candidate's own ``__eq__`` never runs, so
    honest dataclasses, enums and value objects compare by value), and ``x in obj``
    is the judge's own comparison of ``x`` with the items the object's iteration
    gives (as for a list of them), not the candidate's
    ``__contains__`` (which could hold for everything). Hashing is the handle's.
    """

    __slots__ = ("_candidate", "_handle", "_type")

    def __init__(self, candidate, handle, type_name):
        object.__setattr__(self, "_candidate", candidate)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_type", type_name)

    def _ask(self, op, **request):
        return object.__getattribute__(self, "_candidate").call(op, h=object.__getattribute__(self, "_handle"),
                                                                **request)

    def _wire(self, value):
        return object.__getattribute__(self, "_candidate").wire(value)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._ask("getattr", name=name)

    def __setattr__(self, name, value):
        self._ask("setattr", name=name, value=self._wire(value))

    def __call__(self, *args, **kwargs):
        candidate = object.__getattribute__(self, "_candidate")
        answer = candidate.ask(op="call", h=object.__getattribute__(self, "_handle"),
                               args=[self._wire(a) for a in args],
                               kwargs={str(k): self._wire(v) for k, v in kwargs.items()})
        changed = answer.get("changed")
        if changed is not None:
            _write_back(candidate, changed, args, kwargs)
        return candidate.value(answer["value"])

    def __len__(self):
        n = self._ask("len")
        if type(n) is not int:
            raise TypeError("len() of a completion object did not give an int")
        return n

    def __iter__(self):
        items = self._ask("list")
        if type(items) is not list:
            raise TypeError("iterating a completion object did not give a list")
        return iter(items)

    def __getitem__(self, key):
        return self._ask("getitem", key=self._wire(key))

    def __setitem__(self, key, value):
        self._ask("setitem", key=self._wire(key), value=self._wire(value))

    def __contains__(self, item):
        if isinstance(item, Remote):
            return any(element is item for element in self.__iter__())
        return any(element is item or (not isinstance(element, Remote) and element == item)
                   for element in self.__iter__())

    def __eq__(self, other):
        """Value equality, decided by the judge: two objects of the completion's are equal when they are of one
        class and their instance data (fields, slots, an enum member's name: what the candidate reports, read
        without running the objects' methods) are equal, compared here as data. The candidate's ``__eq__``
        never runs; a report it forges has no more power than the plain values it could have returned instead.
        Classes, functions and modules are equal only to themselves."""
        if not isinstance(other, Remote):
            return False  # as a built-in value of another type would not be
        if object.__getattribute__(other, "_candidate") is not object.__getattribute__(self, "_candidate"):
            return False
        if other is self:
            return True
        mine, theirs = self._ask("state"), other._ask("state")
        if type(mine) is not dict or type(theirs) is not dict:
            raise TypeError("the completion's process sent an unreadable object state")
        if mine.get("identity") or theirs.get("identity"):
            return False  # distinct handles: distinct objects
        cls, other_cls = mine.get("cls"), theirs.get("cls")
        if not (isinstance(cls, Remote) and cls is other_cls):
            return False
        data, other_data = mine.get("data"), theirs.get("data")
        if type(data) is not dict or type(other_data) is not dict:
            raise TypeError("the completion's process sent an unreadable object state")
        return data == other_data

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash((Remote, object.__getattribute__(self, "_handle")))

    def __bool__(self):
        """The object's truth as the candidate computes it: a bool it could have returned itself (a re.Match,
        a non-empty container of its own)."""
        truth = self._ask("bool")
        if type(truth) is not bool:
            raise TypeError("the truth of a completion object did not come back as a bool")
        return truth

    def __repr__(self):
        return f"<{object.__getattribute__(self, '_type')} object of the completion's>"


def remote_isinstance(obj, classinfo):
    """``isinstance`` for the tests: where ``classinfo`` names a class of the completion's, the candidate
    answers (a bool it could have given as a plain value); everything else is the built-in's."""
    obj, classinfo = _resolved(obj), _resolved(classinfo)
    if isinstance(classinfo, tuple):
        return any(remote_isinstance(obj, c) for c in classinfo)
    if isinstance(classinfo, Remote):
        candidate = object.__getattribute__(classinfo, "_candidate")
        answer = candidate.call("isinstance", item=candidate.wire(obj), cls=candidate.wire(classinfo))
        if type(answer) is not bool:
            raise TypeError("isinstance() with a class of the completion's did not come back as a bool")
        return answer
    if isinstance(obj, Remote):
        return classinfo is object
    return isinstance(obj, classinfo)


def _resolved(value):
    """A name of the completion's module not asked for yet (``remote_module.LazyName``, as pytest's tests get
    them from ``from solution import Stack``) as what it names; anything else as it is."""
    resolve = type(value).__dict__.get("_rlvr_resolve")
    return resolve(value) if resolve is not None else value
