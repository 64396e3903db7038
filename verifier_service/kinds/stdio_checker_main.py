"""The program that runs a stdio spec's checker in the sandbox (``kinds/stdio_checker.py`` sends this file as a job
file; it is never imported by the service).

Its stdin (JSON, from the host): ``{"nonce": str, "cases": [{"input": str, "output": str, "answer": str}, ...]}``,
where ``output`` is what the candidate's program printed, as the host holds it. It loads ``checker.py`` (the spec's
code, as a module named ``checker``) and calls ``check(input, answer, answer)`` (the jury's answer must pass its own
checker) and then ``check(input, output, answer)`` on each case. Each result goes to the report channel as one JSON
line with the nonce: ``{"case": i, "role": "answer" | "output", "ok": bool, "message": str}``, or ``{"error": ...}``
(with ``case`` and ``role`` where a call raised or returned something that is not a verdict), and it stops at the
first error or rejected jury answer; ``{"done": true}`` at the end. What the checker prints goes nowhere past its
first few KiB (a checker that echoes the output cannot be pushed past the step's output limit by a long output).
"""

import io
import json
import os
import sys

KEEP = 4096  # characters of what the checker prints that are kept (for its author's debugging: nowhere else)


class _Sink(io.TextIOBase):
    """A text stream that keeps the first ``KEEP`` characters written to it and drops the rest."""

    def __init__(self):
        self.kept = []
        self.size = 0

    def writable(self):
        return True

    def write(self, text):
        if self.size < KEEP:
            self.kept.append(str(text)[: KEEP - self.size])
            self.size += len(self.kept[-1])
        return len(text)


def main():
    report = os.fdopen(int(os.environ["RLVR_REPORT_FD"]), "w", encoding="utf-8")
    job = json.loads(sys.stdin.buffer.read())
    nonce = job["nonce"]

    def emit(**event):
        report.write(json.dumps({"nonce": nonce, **event}) + "\n")
        report.flush()

    def describe(exc):
        return f"{type(exc).__name__}: {exc}"[:1000]

    sys.stdout = sys.stderr = _Sink()
    namespace = {"__name__": "checker", "__file__": "checker.py", "__builtins__": __builtins__}
    try:
        with open("checker.py", encoding="utf-8") as fh:
            source = fh.read()
        exec(compile(source, "checker.py", "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001 - whatever the spec's code raised (SystemExit too) is its fault
        emit(error=f"the checker did not load: {describe(exc)}")
        return
    check = namespace.get("check")
    if not callable(check):
        emit(error="the checker defines no function check(input, output, answer)")
        return
    for index, case in enumerate(job["cases"]):
        for role in ("answer", "output"):
            try:
                result = check(case["input"], case[role], case["answer"])
            except BaseException as exc:  # noqa: BLE001 - see above
                emit(case=index, role=role, error=f"check raised {describe(exc)}")
                return
            message = ""
            if type(result) is tuple and len(result) == 2 and type(result[1]) is str:
                result, message = result
            if type(result) is not bool:
                emit(case=index, role=role, error=f"check returned a {type(result).__name__}, not True or False "
                     "(or a tuple (bool, message))")
                return
            emit(case=index, role=role, ok=result, message=message[:300])
            if role == "answer" and not result:
                return
    emit(done=True)


if __name__ == "__main__":
    main()
