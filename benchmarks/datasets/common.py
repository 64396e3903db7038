"""What the real-dataset scripts (``humaneval_x``, ``mxeval``, ``mceval``) share: a batch of requests through the
service (``verify_all``) and a dataset's own harness commands run on many programs in one offline container
(``run_programs``)."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from verifier_service.spec import request_from_json, result_to_json
from verifier_service.testing import InProcessService


def verify_all(service: InProcessService, rows: list[dict]) -> list[dict]:
    """Each request's result (JSON form) from one VerifyBatch; a request the service refuses (INVALID_ARGUMENT:
    the spec is at fault) gets ``{"verdict": "REFUSED", "detail": ...}`` and the rest are sent again."""
    import grpc

    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service._generated import verifier_pb2_grpc as pb_grpc

    refused: dict[int, str] = {}
    while True:
        sent = [k for k in range(len(rows)) if k not in refused]
        try:
            with grpc.insecure_channel(service.address) as channel:
                response = pb_grpc.VerifierStub(channel).VerifyBatch(
                    pb.VerifyBatchRequest(requests=[request_from_json(rows[k]) for k in sent]), timeout=3600)
            break
        except grpc.RpcError as exc:
            which = re.match(r"request (\d+)\b", exc.details() or "")
            if exc.code() != grpc.StatusCode.INVALID_ARGUMENT or which is None:
                raise
            refused[sent[int(which.group(1))]] = exc.details()
    answered = dict(zip(sent, (result_to_json(r) for r in response.results), strict=True))
    return [answered.get(k) or {"verdict": "REFUSED", "detail": refused[k]} for k in range(len(rows))]


def run_programs(programs: dict[str, str], command: str, image: str, before: str = "",
                 files: dict[str, str] | None = None, keep: tuple[str, ...] = (),
                 timeout: int = 7200) -> tuple[dict[str, tuple[int | None, str, str]], dict[str, str]]:
    """Runs each program (file name -> text) with ``command``, a POSIX shell snippet in which ``$f`` is the file's
    name without its extension, all in one container of ``image`` (``docker run --rm --network none``, the files
    in its working directory; ``before`` runs first, once; ``files`` are more files put beside them). Returns
    (name -> (the snippet's exit status, None when it never reported; its stdout; its stderr), the text of each
    file named in ``keep`` that is there at the end)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in {**(files or {}), **programs}.items():
            path = Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for path in (Path(tmp), *Path(tmp).rglob("*")):
            path.chmod(0o777 if path.is_dir() else 0o666)
        names = [name.rsplit(".", 1)[0] for name in programs]
        script = f'{before}for f in {" ".join(names)}; do ({command}) >"$f.out" 2>"$f.err"; echo "$f $?"; done'
        done = subprocess.run(["docker", "run", "--rm", "--network", "none", "--entrypoint", "sh", "-v",
                               f"{tmp}:/w", "-w", "/w", image, "-c", script],
                              capture_output=True, text=True, timeout=timeout, check=False)
        status = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
        out = {}
        for name in names:
            stdout, stderr = (Path(tmp) / f"{name}.out", Path(tmp) / f"{name}.err")
            code = status.get(name, "").strip()
            out[name] = (int(code) if code.lstrip("-").isdigit() else None,
                         stdout.read_text(errors="replace") if stdout.exists() else "",
                         stderr.read_text(errors="replace") if stderr.exists() else done.stderr[-300:])
        kept = {k: (Path(tmp) / k).read_text(errors="replace") for k in keep if (Path(tmp) / k).exists()}
        return out, kept


def disagreement(language: str, task: str, result: dict, theirs: tuple | None) -> str:
    """The line for a task where this service and the harness disagree (``theirs``: the harness's (passed,
    tests ran, detail), None when it was not run)."""
    first = " | ".join(result["detail"].splitlines()[:3])[:300]
    harness_says = "" if theirs is None else \
        f"\tharness: {'passed' if theirs[0] else 'failed'}" \
        f"{'' if theirs[1] else ' (its tests did not run to their end)'}: {theirs[2]}"
    return f"{language}\t{task}\t{result['verdict']}\t{first}{harness_says}"


def harness_columns(agree) -> str:
    """The table's harness columns from the counts of (harness passed, its tests ran, passed here): harness passed
    | of which its tests ran | both passed | harness only (of which its tests ran) | here only."""
    if not agree:
        return "- | - | - | - | -"
    passed = sum(c for (h, _, _), c in agree.items() if h)
    ran = sum(c for (h, t, _), c in agree.items() if h and t)
    both = sum(c for (h, _, o), c in agree.items() if h and o)
    only = sum(c for (h, _, o), c in agree.items() if h and not o)
    here = sum(c for (h, _, o), c in agree.items() if o and not h)
    return f"{passed} | {ran} | {both} | {only} ({agree[(True, True, False)]}) | {here}"
