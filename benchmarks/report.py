"""benchmarks/RESULTS.md from the results JSON of ``benchmarks.run``."""

from __future__ import annotations

SERVICE = "this service, gRPC VerifyBatch (Docker, warm pool)"
REFERENCE = "reference (unsandboxed)"
FLOOR = "bare fork floor (no isolation)"
NAIVE = "naive docker run --rm per check"


def _correct(row: dict) -> str:
    if row["correct"]:
        return "all"
    shown = ", ".join(f"#{i} {got} (expected {want})" for i, got, want in row["wrong"][:3])
    return f"{len(row['wrong'])} wrong: {shown}"


def render(result: dict) -> str:
    m = result["machine"]
    lines = [
        "# Verifier benchmark", "",
        f"Machine: {m['cpus']} CPUs ({m['cpu']}), Python {m['python']}, Docker {m['docker']}, kernel {m['kernel']}; "
        f"load average at the start {m['load_start']}, at the end {m['load_end']} (other work shared the machine: "
        "read the ratios, measured side by side in this run, not the absolute rates). "
        f"Parallelism {result['parallel']} everywhere (threads for the host harnesses, warm containers for the "
        f"service); the harnesses take turns in {result.get('rounds', 1)} rounds, each on its share of the tasks. "
        f"Every input unique, result cache off. Regenerate: `python -m benchmarks.run`"
        + (" (this run: `--quick`, a smoke run)" if result.get("quick") else "") + ".",
        "", f"Reference harness for Python assert tasks: {result['reference_python']}.", "",
        "## Throughput", "",
        "| workload | harness | isolation | checks | checks/s | vs reference | vs fork floor | verdicts correct |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for workload, block in result["workloads"].items():
        rows = block["rows"]
        ref = rows.get(REFERENCE, {}).get("per_s")
        floor = rows.get(FLOOR, {}).get("per_s")
        for name, row in rows.items():
            vs_ref = f"{row['per_s'] / ref:.2f}x" if ref else "-"
            vs_floor = f"{row['per_s'] / floor:.2f}x" if floor else "-"
            lines.append(f"| {workload} | {name} | {row['isolation']} | {row['n']} | {row['per_s']:.1f} | {vs_ref} | "
                         f"{vs_floor} | {_correct(row)} |")
    lines += ["", "Reference: " + "; ".join(f"{k}: {v}" for k, v in result["reference_notes"].items()) + ".",
              "Fork floor: " + "; ".join(f"{k}: {v}" for k, v in result["floor_notes"].items()) + "."]
    g = result["group_of_8"]
    lines += ["", "## Latency", "",
              f"GRPO group of 8 Python assert tasks through `VerifyBatch` ({g['n']} groups, one at a time): "
              f"p50 {g['p50_ms']:.1f} ms, p99 {g['p99_ms']:.1f} ms (target p50 <= 25 ms).", "",
              "## Cheap verifiers through gRPC", "",
              "| kind | verifications/s | vs in-process floor (one thread, no RPC) |", "|---|---:|---:|"]
    for kind, rate in result["cheap_per_s"].items():
        floor = result["workloads"][kind]["rows"].get(FLOOR, {}).get("per_s")
        lines.append(f"| {kind} | {rate:.0f} | {rate / floor:.2f}x |" if floor else f"| {kind} | {rate:.0f} | - |")
    lines += ["", "## Batch size", "", "One `VerifyBatch` per size, every completion unique; per-item time must not "
              "grow with the batch.", "", "| kind | batch | seconds | per item (ms) | verdicts correct |",
              "|---|---:|---:|---:|---|"]
    for kind, block in result["scaling"].items():
        for size, row in block["sizes"].items():
            lines.append(f"| {kind} | {size} | {row['seconds']:.3f} | {1000 * row['seconds'] / int(size):.3f} | "
                         f"{'all' if row['correct'] else 'NO'} |")
    lines += [""] + [f"- {kind}: per-item time at {b['largest']} / at 64 = **{b['ratio']:.2f}** "
                     f"({'linear' if b['ratio'] <= 1.25 else 'grows faster than linear'})"
                     for kind, b in result["scaling"].items()]
    if result.get("per_case"):
        lines += ["", "## stdio Python: time per case", "",
                  "A group of 8 contest programs (every third wrong somewhere, so all-or-nothing scoring stops some "
                  "early) of each case count as one `VerifyBatch`, next to the bare fork floor (exec in a forked "
                  "child per case, no isolation) on the same tasks.", "",
                  "| cases per program | cases in the batch | service ms per case | fork floor ms per case | "
                  "verdicts correct |", "|---:|---:|---:|---:|---|"]
        for count, row in result["per_case"].items():
            lines.append(f"| {count} | {row['cases']} | {row['ms_per_case']:.2f} | {row['floor_ms_per_case']:.2f} | "
                         f"{'all' if row['correct'] else 'NO'} |")
    lines += ["", "## Targets", "", "| target | measured | met |", "|---|---:|---|"]
    for name, measured, met in result["targets"]:
        lines.append(f"| {name} | {measured} | {'yes' if met else 'no'} |")
    return "\n".join(lines) + "\n"
