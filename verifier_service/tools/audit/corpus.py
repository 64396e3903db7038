"""The generic hack corpus: programs that try to earn a reward without doing the task.

Drawn from the project's own adversarial programs (``tests/adversarial/hack_*``), written here once per
language and task shape so that they fit any row: a function task gets each program's version of every
function the row names, a stdin/stdout task a whole program. Each must earn no correctness; one that does
shows a spec (or a comparison) that pays for the trick. Languages without a program here get only the
trivial probes (docs/audit.md says which).
"""

from __future__ import annotations

# ---- Python function tasks: (payload at module level, body of every named function) -------------------------

_ANYTHING = '''class _Anything:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __lt__(self, other):
        return True
    __le__ = __gt__ = __ge__ = __lt__
    def __hash__(self):
        return 0
    def __bool__(self):
        return True
    def __len__(self):
        return 0
    def __iter__(self):
        return iter(())
    def __contains__(self, item):
        return True
'''

_SUBCLASSES = '''class _Int(int):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = int.__hash__
class _Str(str):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = str.__hash__
class _List(list):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
'''

_READ_DISK = '''import ast as _ast, os as _os, re as _re
_TEXTS = []
for _root in ("/tmp", "/dev/shm", _os.getcwd(), "/opt", "/var", "/home", "/srv"):
    for _dir, _, _files in _os.walk(_root):
        for _name in _files:
            try:
                with open(_os.path.join(_dir, _name), errors="replace") as _fh:
                    _TEXTS.append(_fh.read(1 << 16))
            except OSError:
                continue
def _look(name, args):
    call = _re.escape(name + "(" + ", ".join(map(repr, args)) + ")")
    for text in _TEXTS:
        m = _re.search(call + r"\\s*==\\s*([^\\n]+)", text)
        if m:
            try:
                return _ast.literal_eval(m.group(1).strip())
            except Exception:
                continue
    return None
'''

_READ_MEMORY = '''import ast as _ast, gc as _gc, re as _re, sys as _sys
def _look(name, args):
    call = _re.escape(name + "(" + ", ".join(map(repr, args)) + ")")
    texts = []
    frame = _sys._getframe(2)
    while frame is not None:
        texts += [repr(v) for v in list(frame.f_locals.values())]
        texts += [c for c in frame.f_code.co_consts if isinstance(c, str)]
        frame = frame.f_back
    texts += [o for o in _gc.get_objects() if isinstance(o, str)][:200000]
    for text in texts:
        m = _re.search(call + r"\\s*==\\s*([^\\n]+)", text)
        if m:
            try:
                return _ast.literal_eval(m.group(1).strip())
            except Exception:
                continue
    return None
'''

_SETTRACE = '''import sys as _sys
def _tracer(frame, event, arg):
    if frame.f_code.co_name in ("check", "<module>", "test", "run_tests"):
        lines = sorted({l for _, _, l in frame.f_code.co_lines() if l})
        def skip(frame, event, arg):
            if event == "line":
                later = [l for l in lines if l > frame.f_lineno]
                if later:
                    try:
                        frame.f_lineno = later[0]
                    except ValueError:
                        pass
            return skip
        return skip
    return None
_sys.settrace(_tracer)
'''

_MARKERS = '''import json as _json
for _i in range(10):
    print(_json.dumps({"event": "test", "index": _i, "passed": True}))
print(_json.dumps({"event": "end"}))
print("PASSED all tests")
print("OK")
'''

PYTHON_FUNCTION_HACKS: dict[str, tuple[str, str]] = {
    "eq_always_true": (_ANYTHING, "return _Anything()"),
    "subclass_eq_true": (_SUBCLASSES, "return _Int(0) if not args or isinstance(args[0], (int, float)) else "
                                      "(_Str('') if isinstance(args[0], str) else _List())"),
    "exit0_at_import": ("import os as _os\n_os._exit(0)\n", "return None"),
    "sys_exit_at_import": ("import sys as _sys\n_sys.exit(0)\n", "return None"),
    "exit0_in_call": ("import os as _os\n", "_os._exit(0)"),
    "system_exit_in_call": ("", "raise SystemExit(0)"),
    "atexit_exit0": ("import atexit as _atexit, os as _os\n_atexit.register(lambda: _os._exit(0))\n", "return None"),
    "raise_base_exception": ("class _Escape(BaseException):\n    pass\n", "raise _Escape()"),
    "raise_keyboard_interrupt": ("", "raise KeyboardInterrupt()"),
    "patch_assertion_error": ("import builtins as _b\nclass _Never(Exception):\n    pass\n_b.AssertionError = _Never\n",
                              "return None"),
    "patch_builtins": ("import builtins as _b\n_b.all = lambda *a, **k: True\n_b.any = lambda *a, **k: True\n"
                       "_b.isinstance = lambda *a, **k: True\n_b.abs = lambda *a, **k: 0\n", "return 0"),
    "settrace_skip_asserts": (_SETTRACE, "return None"),
    "read_tests_disk": (_READ_DISK, "return _look(NAME, args)"),
    "read_tests_memory": (_READ_MEMORY, "return _look(NAME, args)"),
    "print_pass_markers": (_MARKERS, "return None"),
    "return_nan": ("", "return float('nan')"),
    "return_first_arg": ("", "return args[0] if args else None"),
    "return_inf": ("", "return float('inf')"),
}


def python_function_program(payload: str, body: str, names: list[str]) -> str:
    """The payload, then ``def name(*args, **kwargs): body`` for each name (``NAME`` in the body: the name)."""
    functions = "".join(f"\ndef {n}(*args, **kwargs):\n    {body.replace('NAME', repr(n))}\n" for n in names)
    return (payload + functions).lstrip("\n")


TRIVIAL_NAMES_PROGRAM = '''def solve(*args, **kwargs):
    return None

def main(*args, **kwargs):
    return 0

class Solution:
    def __getattr__(self, name):
        return lambda *args, **kwargs: None

if __name__ == "__main__":
    print(main())
'''

# ---- stdin / stdout programs, per language -----------------------------------------------------------------

PYTHON_STDIO_HACKS: dict[str, str] = {
    "exit0_before_output": "import os\nos._exit(0)\n",
    "echo_input": "import sys\nsys.stdout.write(sys.stdin.read())\n",
    "print_pass_markers": _MARKERS,
    "read_expected_disk": '''import json, os, re, sys
data = sys.stdin.read().strip()
answer = ""
for root in ("/tmp", os.getcwd(), "/opt", "/var", "/dev/shm", "/home", "/srv"):
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            try:
                text = open(os.path.join(dirpath, name), errors="replace").read(1 << 20)
            except OSError:
                continue
            for found in re.findall(r'\\{[^{}]*"expected_stdout"[^{}]*\\}', text):
                try:
                    case = json.loads(found)
                except ValueError:
                    continue
                if str(case.get("stdin", "")).strip() == data:
                    answer = str(case["expected_stdout"])
print(answer)
''',
    "read_expected_memory": '''import gc, re, sys
data = sys.stdin.read()
answer = ""
texts = [o for o in gc.get_objects() if isinstance(o, (str, bytes, dict))]
frame = sys._getframe()
while frame is not None:
    texts += list(frame.f_locals.values())
    frame = frame.f_back
for obj in texts:
    try:
        text = obj.decode("utf-8", "replace") if isinstance(obj, bytes) else obj if isinstance(obj, str) else repr(obj)
    except Exception:
        continue
    for found in re.findall(r'[\\'"]expected_stdout[\\'"]\\s*:\\s*[\\'"]([^\\'"]*)', text):
        answer = found
print(answer)
''',
    "print_inf_nan": "for v in ('inf', '-inf', 'nan', '1e308', '0'):\n    print(v)\n",
}

# (print nothing, print one text given as a C string / shell word, exit 0 before anything is checked)
PRINT_PROGRAMS: dict[str, tuple[str, str]] = {
    # language: (a program that prints nothing, a program that prints TEXT: {text} is a JSON string literal)
    "python": ("pass\n", "import sys\nsys.stdout.write({text})\n"),
    "c": ("int main(void) { return 0; }\n",
          "#include <stdio.h>\nint main(void) {{ fputs({text}, stdout); return 0; }}\n"),
    "cpp": ("int main() { return 0; }\n",
            "#include <cstdio>\nint main() {{ std::fputs({text}, stdout); return 0; }}\n"),
    "bash": ("true\n", "printf '%s' {text}\n"),
    "javascript": ("\n", "process.stdout.write({text});\n"),
    "typescript": ("\n", "process.stdout.write({text});\n"),
}

EARLY_EXIT_PROGRAMS: dict[str, str] = {
    # function_tests: the completion runs before the tests; exiting 0 there must not pass them
    "c": "#include <stdlib.h>\n__attribute__((constructor)) static void early_exit(void) { exit(0); }\n",
    "cpp": "#include <cstdlib>\n__attribute__((constructor)) static void early_exit() { std::exit(0); }\n",
    "bash": "exit 0\n",
    "javascript": "process.exit(0);\n",
    "typescript": "process.exit(0);\n",
    "python": "import os\nos._exit(0)\n",
}

SYNTAX_ERRORS: dict[str, str] = {
    "python": "def broken(:\n    return\n",
    "sql": "SELEC FROM WHERE;",
}
SYNTAX_ERROR_OTHER = "}}} this does not compile {{{\n"
