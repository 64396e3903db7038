"""stdio Python inside one sandbox: a fork of the program host per case against a fresh python3 per case.

    python -m benchmarks.stdio_cases [--image TAG] [--counts 1 10 50 100] [--repeat 3] [--out DIR]

One warm sandbox container (the service's isolation flags) runs the runner in ``--serve`` mode; this process
sends it jobs directly, as the service does: a contest program (benchmarks/workloads.py ``contest``) with 1 to
100 cases, each job twice, with the steps the service sends now (``harness``: the program compiled once, each
case a fork of the program host) and as the service sent them before (the same steps without it: a compile
check, then ``python3 solution.py`` per case), alternating, so both meet the same load. Per case: wall
milliseconds (best of ``--repeat``), and by the runner's own account the CPU milliseconds and page faults of
the sandbox's processes (the CPU account depends far less on other load than the wall time). Writes
STDIO_CASES.md and stdio_cases.json to --out (default benchmarks/).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

from benchmarks import workloads

HERE = Path(__file__).resolve().parent
COMPILE = ["python3", "-s", "-c",
           "import sys; compile(open('solution.py', encoding='utf-8').read(), 'solution.py', 'exec')"]
RUN = ["python3", "-s", "solution.py"]
MEMORY = 512 << 20


def job(task: dict, forked: bool, token: str) -> dict:
    """The runner's job for ``task``: the steps of kinds/stdio.py's Python path (``forked``) or the same steps
    without their runner fields (a fresh interpreter per case)."""
    steps = [{"name": "compile", "argv": COMPILE, "timeout_s": 30.0, "output_limit": 65536, "stop_on_failure": True,
              "memory_bytes": MEMORY, **({"harness": "python_program"} if forked else {})}]
    steps += [{"name": f"case {i}", "argv": RUN, "timeout_s": 10.0, "stdin": case["stdin"], "memory_bytes": MEMORY,
               "output_limit": 1 << 20, "stdin_pipe": True, **({"harness": "python_case"} if forked else {})}
              for i, case in enumerate(task["cases"])]
    return {"files": {"solution.py": task["completion"]}, "steps": steps, "file_size_limit": 16 << 20,
            "open_files": 256, "token": token, "stream": False}


class Sandbox:
    """One warm container running the runner, driven over its stdin and stdout."""

    def __init__(self, image: str, labels: tuple[str, ...]):
        self.proc = subprocess.Popen(
            ["docker", "run", "--rm", "-i", "--network", "none", "--read-only", "--tmpfs", "/tmp:rw,exec,size=64m",
             "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", "10001:10001", "--memory", "1g",
             "--pids-limit", "64", "--label", "rlvr.benchmark=stdio_cases",
             *(a for label in labels for a in ("--label", label)), image, "--serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.jobs = 0

    def run(self, data: dict) -> tuple[float, list[dict], dict]:
        self.jobs += 1
        token = f"t{self.jobs}"
        data = {**data, "token": token}
        started = time.perf_counter()
        self.proc.stdin.write(json.dumps(data) + "\n")
        self.proc.stdin.flush()
        steps = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the sandbox's runner ended")
            event = json.loads(line)
            if event.get("token") != token:
                continue
            if event.get("event") == "done":
                return time.perf_counter() - started, steps, event
            steps.append(event)

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def measure(sandbox: Sandbox, counts: list[int], repeat: int) -> dict:
    task0 = workloads.contest(0, 1)
    sandbox.run(job(task0, True, "warm"))  # the container started, the zygote warm
    sandbox.run(job(task0, False, "warm"))
    out = {}
    for count in counts:
        task = workloads.contest(0, count)  # a right program: every case runs
        rows = {"forked": [], "fresh": []}
        for r in range(repeat):
            for mode in (("forked", "fresh") if r % 2 == 0 else ("fresh", "forked")):
                seconds, steps, done = sandbox.run(job(task, mode == "forked", mode))
                stdout = [s["stdout"] for s in steps[1:]]
                assert stdout == [c["expected_stdout"] for c in task["cases"]], f"{mode}: a case's output is wrong"
                usage = done.get("usage", {})
                rows[mode].append((seconds, sum(u[0] for u in usage.values()), sum(u[1] for u in usage.values())))
        out[str(count)] = {mode: {"wall_ms_per_case": 1000 * min(s for s, _, _ in samples) / count,
                                  "cpu_ms_per_case": 1000 * min(c for _, c, _ in samples) / count,
                                  "faults_per_case": min(f for _, _, f in samples) / count}
                           for mode, samples in rows.items()}
    return out


def render(result: dict) -> str:
    lines = ["# stdio Python: a fork per case against a fresh python3 per case", "",
             f"One warm sandbox (image `{result['image']}`), the runner driven directly; a contest program "
             "(workloads.contest: all of stdin read at once, one write) that is right on every case, each job both "
             f"ways, alternating; best of {result['repeat']}. Load average {result['load'][0]} at the start, "
             f"{result['load'][1]} at the end. CPU and page faults are the runner's own account of the sandbox's "
             "processes (runner, zygote, the steps' processes) per case, compile step included. Regenerate: "
             "`python -m benchmarks.stdio_cases`.", "",
             "| cases | fresh python3: wall ms/case | fork: wall ms/case | fresh: CPU ms/case | fork: CPU ms/case | "
             "CPU saved | fresh: faults/case | fork: faults/case |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for count, row in result["counts"].items():
        fresh, forked = row["fresh"], row["forked"]
        lines.append(f"| {count} | {fresh['wall_ms_per_case']:.2f} | {forked['wall_ms_per_case']:.2f} | "
                     f"{fresh['cpu_ms_per_case']:.2f} | {forked['cpu_ms_per_case']:.2f} | "
                     f"{fresh['cpu_ms_per_case'] / forked['cpu_ms_per_case']:.1f}x | {fresh['faults_per_case']:.0f} | "
                     f"{forked['faults_per_case']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from verifier_service.config import load_config

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    config = load_config()
    parser.add_argument("--image", default=config.sandbox_image)
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 10, 50, 100])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    labels = tuple(item.strip() for item in config.sandbox_labels.split(",") if item.strip())
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    sandbox = Sandbox(args.image, labels)
    try:
        counts = measure(sandbox, args.counts, args.repeat)
    finally:
        sandbox.close()
    result = {"image": args.image, "repeat": args.repeat, "counts": counts,
              "load": [load_start, " ".join(f"{x:.2f}" for x in os.getloadavg())]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "stdio_cases.json").write_text(json.dumps(result, indent=2) + "\n")
    text = render(result)
    (args.out / "STDIO_CASES.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
