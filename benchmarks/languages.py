"""stdio per language, side by side in one run: this service (warm pool, compile once per source) against
``docker run --rm`` per check (the service's isolation flags, the image's runner doing the steps), and a sandbox's
cold and warm start.

    python -m benchmarks.languages [--tasks 8] [--languages c,go] [--out DIR]

Per language: ``--tasks`` unique programs (a + b, four cases each; each source differs by a comment, so
every one is compiled) verified in one ``VerifyBatch``, then the same batch again (every source seen: compiled
programs come from the host's cache); the same tasks through ``docker run --rm`` per check, one at a time
each in ``--parallel`` threads; and one check on a fresh sandbox (``sandbox_pool: false``: a container start
with it) against one on a warm one. Writes languages.json and LANGUAGES.md to --out (default benchmarks/).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from benchmarks import harnesses
from verifier_service.config import ServiceConfig
from verifier_service.kinds.languages import IMAGE_LANGS, LANGUAGES
from verifier_service.spec import request_from_json, result_to_json
from verifier_service.testing import InProcessService

HERE = Path(__file__).resolve().parent
SOURCES = {
    "python": "a, b = map(int, input().split())\nprint(a + b)\n",
    "c": '#include <stdio.h>\nint main(void){long a,b;scanf("%ld %ld",&a,&b);printf("%ld\\n",a+b);return 0;}\n',
    "cpp": "#include <iostream>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n",
    "bash": "read -r a b\necho $((a + b))\n",
    "java": "import java.util.*;\npublic class Main { public static void main(String[] x) {\n"
            "  Scanner in = new Scanner(System.in); System.out.println(in.nextLong() + in.nextLong()); } }\n",
    "javascript": "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
                  "console.log(a + b);\n",
    "typescript": "const s: string = require('fs').readFileSync(0, 'utf8');\n"
                  "const [a, b]: number[] = s.trim().split(/\\s+/).map(Number);\nconsole.log(a + b);\n",
    "go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar a, b int64\n\tfmt.Scan(&a, &b)\n'
          '\tfmt.Println(a + b)\n}\n',
    "rust": "use std::io::Read;\nfn main() {\n    let mut s = String::new();\n"
            "    std::io::stdin().read_to_string(&mut s).unwrap();\n"
            "    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n"
            "    println!(\"{}\", v[0] + v[1]);\n}\n",
}
COMMENT = {"python": "#", "bash": "#"}
CASES = [{"stdin": f"{i} {2 * i}\n", "expected_stdout": f"{3 * i}\n"} for i in range(1, 5)]


def task(language: str, index: int) -> dict:
    mark = COMMENT.get(language, "//")
    return {"kind": "stdio", "language": language, "cases": CASES,
            "completion": f"{mark} task {index}\n" + SOURCES[language]}


def verify(service: InProcessService, tasks: list[dict]) -> tuple[float, list[str]]:
    import grpc

    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service._generated import verifier_pb2_grpc as pb_grpc

    requests = [request_from_json({"id": str(i), "completion": t["completion"],
                                   "spec": {k: v for k, v in t.items() if k != "completion"}})
                for i, t in enumerate(tasks)]
    with grpc.insecure_channel(service.address) as channel:
        started = time.perf_counter()
        response = pb_grpc.VerifierStub(channel).VerifyBatch(pb.VerifyBatchRequest(requests=requests), timeout=1800)
        elapsed = time.perf_counter() - started
    return elapsed, [result_to_json(r)["verdict"] for r in response.results]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--languages", default=",".join(SOURCES))
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    config = ServiceConfig(port=0, max_concurrency=args.parallel, compile_timeout_s=300.0, default_timeout_s=60.0,
                           sandbox_image=os.environ.get("RLVR_VERIFIER_SANDBOX_IMAGE", "rlvr-sandbox-python:latest"),
                           sandbox_langs_image=os.environ.get("RLVR_VERIFIER_SANDBOX_LANGS_IMAGE",
                                                              "rlvr-sandbox-langs:latest"))
    rows = []
    with InProcessService(config) as warm, InProcessService(replace(config, sandbox_pool=False)) as cold:
        for language in args.languages.split(","):
            tasks = [task(language, i) for i in range(args.tasks)]
            image = config.sandbox_langs_image if LANGUAGES[language].image == IMAGE_LANGS else config.sandbox_image
            cold_s, cold_v = verify(cold, tasks[:1])
            verify(warm, [task(language, -1)])  # the pool has a sandbox of the language's image
            first_s, first_v = verify(warm, tasks)
            again_s, again_v = verify(warm, tasks)
            one_s, _ = verify(warm, [task(language, -2)])
            with ThreadPoolExecutor(args.parallel) as pool:
                started = time.perf_counter()
                naive_v = list(pool.map(harnesses.naive_docker, tasks, [image] * len(tasks)))
                naive_s = time.perf_counter() - started
            verdicts = set(cold_v + first_v + again_v + naive_v)
            rows.append({"language": language, "tasks": args.tasks, "service_checks_per_s": args.tasks / first_s,
                         "service_cached_checks_per_s": args.tasks / again_s,
                         "naive_checks_per_s": args.tasks / naive_s,
                         "cold_check_s": cold_s, "warm_check_s": one_s, "verdicts": sorted(verdicts)})
            print(json.dumps(rows[-1]), flush=True)
    (args.out / "languages.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = ["# stdio per language (benchmarks/languages.py)", "",
             f"{args.tasks} unique a+b programs per language, 4 cases each, {args.parallel} sandboxes / threads. "
             "checks/s: this service (first: every source compiled; again: the same sources, compiled programs "
             "from the cache) against `docker run --rm` per check; one check on a fresh sandbox (cold: a container "
             "start included) against one on a warm sandbox.", "",
             "| language | service checks/s | service, cached compile | docker run per check | ratio | cold check s "
             "| warm check s | verdicts |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['language']} | {r['service_checks_per_s']:.2f} | {r['service_cached_checks_per_s']:.2f} | "
                     f"{r['naive_checks_per_s']:.2f} | {r['service_checks_per_s'] / r['naive_checks_per_s']:.1f}x | "
                     f"{r['cold_check_s']:.2f} | {r['warm_check_s']:.2f} | {', '.join(r['verdicts'])} |")
    (args.out / "LANGUAGES.md").write_text("\n".join(lines) + "\n")
    return 0 if all(r["verdicts"] == ["PASSED"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
