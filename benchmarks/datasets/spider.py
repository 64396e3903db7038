"""Spider's dev set through the ``sql`` kind, side by side with Spider's official execution judge.

For every converted dev row (``trainer data convert --format spider``) this builds candidate completions: the
gold itself, the gold of another question on the same database, and mutations of the gold (DISTINCT dropped,
ORDER BY dropped, its ties put in another order, LIMIT dropped or raised, ASC/DESC flipped, a number or a
string constant changed, the first two selected columns swapped). Each is verified by this service (an
in-process server, Docker sandbox) and judged by the official ``exec_eval.eval_exec_match`` of
taoyds/test-suite-sql-eval on the row's ``.sqlite`` file (run by ``spider_official.py`` under a Python that
has ``sqlparse``); the table counts agreement: ours PASSED or not against theirs 1 or 0, with DISTINCT kept
(``--keep_distinct``, the strict reading) and with the judge's default (DISTINCT removed from both queries).

    python scripts/datasets/fetch.py spider --from spider=SRC          # data in /work/data/spider
    python -m benchmarks.datasets.spider --official DIR --official-python PY [--out FILE] [--limit N]

DIR is a checkout of taoyds/test-suite-sql-eval, PY a Python with sqlparse and tqdm (not the project's venv).
Every disagreement is printed (kind, row, candidate, both verdicts, our detail).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from verifier_service.config import load_config
from verifier_service.spec import request_from_json, result_to_json
from verifier_service.testing import InProcessService

HERE = Path(__file__).resolve().parent
BATCH_BYTES = 24 << 20  # requests per VerifyBatch: under the service's max_message_bytes (64 MiB)
_STRING = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")


# ---- mutations of a gold query (string-level; a mutation that breaks the query is judged as it is) ----------

def _top_level(query: str) -> str:
    """The query with strings and parenthesised parts blanked (same length)."""
    text = _STRING.sub(lambda m: " " * len(m.group()), query)
    while True:
        stripped = re.sub(r"\([^()]*\)", lambda m: " " * len(m.group()), text)
        if stripped == text:
            return text
        text = stripped


def no_distinct(q: str) -> str | None:
    out = re.sub(r"\bdistinct\s+", "", q, flags=re.IGNORECASE)
    return out if out != q else None


def no_order_by(q: str) -> str | None:
    top = _top_level(q)
    found = list(re.finditer(r"\border\s+by\b", top, re.IGNORECASE))
    if len(found) != 1 or re.search(r"\border\s+by\b", q[found[0].end():], re.IGNORECASE):
        return None
    tail = re.search(r"\blimit\b", top[found[0].end():], re.IGNORECASE)
    end = found[0].end() + tail.start() if tail else len(q)
    return (q[:found[0].start()] + q[end:]).strip()


def ties_reordered(q: str) -> str | None:
    """One more ORDER BY key (the first column, descending): rows that tie on the gold's keys come in another
    order; the result is as right as the gold's (SQL leaves the order of ties open)."""
    top = _top_level(q)
    found = list(re.finditer(r"\border\s+by\b", top, re.IGNORECASE))
    if len(found) != 1:
        return None
    tail = re.search(r"\blimit\b|;", top[found[0].end():], re.IGNORECASE)
    end = found[0].end() + tail.start() if tail else len(q.rstrip())
    return q[:end].rstrip() + " , 1 DESC " + q[end:]


def no_limit(q: str) -> str | None:
    top = _top_level(q)
    found = list(re.finditer(r"\s+limit\s+\d+", top, re.IGNORECASE))
    return (q[:found[-1].start()] + q[found[-1].end():]).strip() if found else None


def limit_plus_one(q: str) -> str | None:
    top = _top_level(q)
    found = list(re.finditer(r"\blimit\s+(\d+)", top, re.IGNORECASE))
    if not found:
        return None
    m = found[-1]
    return q[:m.start(1)] + str(int(m.group(1)) + 1) + q[m.end(1):]


def flip_direction(q: str) -> str | None:
    if re.search(r"\bdesc\b", q, re.IGNORECASE):
        return re.sub(r"\bdesc\b", "ASC", q, count=1, flags=re.IGNORECASE)
    if re.search(r"\basc\b", q, re.IGNORECASE):
        return re.sub(r"\basc\b", "DESC", q, count=1, flags=re.IGNORECASE)
    return None


def number_changed(q: str) -> str | None:
    masked = _STRING.sub(lambda m: " " * len(m.group()), q)
    start = re.search(r"\b(?:where|having)\b", masked, re.IGNORECASE)
    if not start:
        return None
    for m in re.finditer(r"(?<![\w.])(\d+)(?![\w.])", masked[start.end():]):
        before = masked[:start.end() + m.start()].rstrip().lower()
        if before.endswith("limit"):
            continue
        at = start.end() + m.start(1)
        return q[:at] + str(int(m.group(1)) + 1) + q[at + len(m.group(1)):]
    return None


def string_changed(q: str) -> str | None:
    m = _STRING.search(q)
    if not m or len(m.group()) < 3:
        return None
    return q[:m.end() - 1] + "zz" + q[m.end() - 1:]


def columns_swapped(q: str) -> str | None:
    top = _top_level(q)
    select = re.match(r"\s*select\s+(distinct\s+)?", top, re.IGNORECASE)
    frm = re.search(r"\bfrom\b", top, re.IGNORECASE)
    if not select or not frm:
        return None
    start, end = select.end(), frm.start()
    cuts = [start] + [i + 1 for i in range(start, end) if top[i] == ","] + [end + 1]
    items = [q[a:b - 1].strip() for a, b in itertools.pairwise(cuts)]
    if len(items) < 2 or items[0] == items[1]:
        return None
    items[0], items[1] = items[1], items[0]
    return q[:start] + " , ".join(items) + " " + q[end:]


MUTATIONS = {"no-distinct": no_distinct, "no-order-by": no_order_by, "ties-reordered": ties_reordered,
             "no-limit": no_limit,
             "limit+1": limit_plus_one, "asc/desc": flip_direction, "number+1": number_changed,
             "string-changed": string_changed, "columns-swapped": columns_swapped}


def candidates(rows: list[dict]) -> list[dict]:
    """(row, candidate name, query) for every converted row: the gold, another gold of its database, and each
    mutation that applies and changes the text."""
    by_db: dict[str, list[dict]] = {}
    for row in rows:
        by_db.setdefault(row["db_id"], []).append(row)
    out = []
    for row in rows:
        gold = row["gold"]
        out.append({**row, "candidate": "gold", "query": gold})
        peers = by_db[row["db_id"]]
        index = peers.index(row)
        for step in range(1, len(peers)):  # the next question (cyclically) whose gold differs in text
            other = peers[(index + step) % len(peers)]["gold"]
            if " ".join(other.lower().split()) != " ".join(gold.lower().split()):
                out.append({**row, "candidate": "other-gold", "query": other})
                break
        for name, mutate in MUTATIONS.items():
            mutated = mutate(gold)
            if mutated and mutated.strip() != gold.strip():
                out.append({**row, "candidate": name, "query": mutated})
    for number, item in enumerate(out):
        item["key"] = number
    return out


def converted_rows(data: Path) -> list[dict]:
    rows = []
    with open(data / "converted.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            spec = json.loads(row["verification"])
            db_id = row["id"].split("-", 1)[1].rsplit("-", 1)[0]
            rows.append({"id": row["id"], "db_id": db_id, "spec": spec, "gold": spec["gold"]})
    return rows


def ours(items: list[dict], backend: str) -> dict[int, dict]:
    """Our verdicts, keyed by candidate."""
    import grpc

    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service._generated import verifier_pb2_grpc as pb_grpc

    config = replace(load_config(), port=0, sandbox_backend=backend, max_concurrency=2)  # RLVR_VERIFIER_* honoured
    results: dict[int, dict] = {}
    batches, batch, size = [], [], 0
    for item in items:
        length = len(item["spec"]["setup"]) + len(item["query"]) + 1024
        if batch and size + length > BATCH_BYTES:
            batches.append(batch)
            batch, size = [], 0
        batch.append(item)
        size += length
    batches += [batch] if batch else []
    options = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]
    with InProcessService(config) as service, grpc.insecure_channel(service.address, options=options) as channel:
        stub = pb_grpc.VerifierStub(channel)
        for number, batch in enumerate(batches, 1):
            requests = [request_from_json({"id": str(i["key"]), "completion": f"```sql\n{i['query']}\n```",
                                           "spec": i["spec"]}) for i in batch]
            response = stub.VerifyBatch(pb.VerifyBatchRequest(requests=requests), timeout=3600)
            for item, result in zip(batch, response.results, strict=True):
                results[item["key"]] = result_to_json(result)
            print(f"\rours: batch {number}/{len(batches)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return results


def theirs(items: list[dict], data: Path, official: Path, python: str) -> dict[int, dict]:
    """The official judge's verdicts, keyed by candidate."""
    lines = "".join(json.dumps({"key": i["key"], "db": str(data / "database" / i["db_id"] / f"{i['db_id']}.sqlite"),
                                "pred": i["query"], "gold": i["gold"]}) + "\n" for i in items)
    done = subprocess.run([python, str(HERE / "spider_official.py"), str(official)], input=lines, text=True,
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the official judge failed: {done.stderr[-2000:]}")
    return {out["key"]: out for out in map(json.loads, done.stdout.splitlines())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data/spider"))
    parser.add_argument("--official", type=Path, required=True, help="a checkout of taoyds/test-suite-sql-eval")
    parser.add_argument("--official-python", default=sys.executable, help="a Python with sqlparse and tqdm")
    parser.add_argument("--backend", default="docker", choices=("docker", "bwrap"))
    parser.add_argument("--limit", type=int, default=0, help="the first N converted rows only (0: all)")
    parser.add_argument("--out", type=Path, help="write every candidate's verdicts (JSON lines) here")
    args = parser.parse_args()
    rows = converted_rows(args.data)
    rows = rows[:args.limit] if args.limit else rows
    items = candidates(rows)
    print(f"{len(rows)} rows, {len(items)} candidates", file=sys.stderr)
    started = time.perf_counter()
    official = theirs(items, args.data, args.official, args.official_python)
    official_s = time.perf_counter() - started
    started = time.perf_counter()
    verdicts = ours(items, args.backend)
    ours_s = time.perf_counter() - started
    table: dict[str, Counter] = {}
    out_lines = []
    for item in items:
        mine, judge = verdicts[item["key"]], official[item["key"]]
        passed = mine["verdict"] == "PASSED"
        record = {"id": item["id"], "candidate": item["candidate"], "query": item["query"], "gold": item["gold"],
                  "ours": mine["verdict"], "detail": mine["detail"][:300], **{k: judge[k] for k in
                                                                          ("distinct_kept", "distinct_removed")}}
        out_lines.append(record)
        for mode in ("distinct_kept", "distinct_removed"):
            theirs_says = judge[mode]
            if not isinstance(theirs_says, int):
                cell = f"judge: {theirs_says}"[:60]
            else:
                cell = {(True, 1): "both pass", (False, 0): "both fail", (True, 0): "ours PASS, theirs fail",
                        (False, 1): "ours fail, theirs pass"}[(passed, theirs_says)]
            table.setdefault(mode, Counter())[(item["candidate"], cell)] += 1
            if cell not in ("both pass", "both fail") and mode == "distinct_kept":
                print(f"{cell}\t{item['id']}\t{item['candidate']}\t{mine['verdict']}\t{item['query']}\t"
                      f"gold: {item['gold']}\t{mine['detail'][:200]}", flush=True)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in out_lines))
    cells = ["both pass", "both fail", "ours PASS, theirs fail", "ours fail, theirs pass"]
    for mode, counts in table.items():
        print(f"\n{mode} (official judge {'with --keep_distinct' if mode == 'distinct_kept' else 'default'}):")
        print("| candidate | " + " | ".join(cells) + " | other |\n|---" * 1 + "|---" * (len(cells) + 1) + "|")
        for name in ["gold", "other-gold", *MUTATIONS]:
            row = [counts.get((name, c), 0) for c in cells]
            other = sum(n for (cand, c), n in counts.items() if cand == name and c not in cells)
            print(f"| {name} | " + " | ".join(str(n) for n in row) + f" | {other} |")
        total = [sum(n for (_, c), n in counts.items() if c == cell) for cell in cells]
        other = sum(n for (_, c), n in counts.items() if c not in cells)
        print("| **all** | " + " | ".join(str(n) for n in total) + f" | {other} |")
    print(f"\nseconds: ours {ours_s:.0f} (in-process service, docker, 2 sandboxes), official judge {official_s:.0f}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
