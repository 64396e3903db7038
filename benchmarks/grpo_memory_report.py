"""``docs/grpo-memory.md`` from ``benchmarks/grpo_memory.json`` and the current memory model.

``python -m benchmarks.grpo_memory --render`` calls ``render``; nothing here measures anything.
"""

from __future__ import annotations

from pathlib import Path
from string import Template
from typing import Any

from trainer import memory

TEMPLATE = Path(__file__).with_name("grpo_memory.md.tmpl")


def device_peak_gib(point: dict[str, Any]) -> float | None:
    """What the process held on the GPU at its peak: the allocator's reserved peak + memory outside the allocator."""
    if point.get("peak_reserved_gib") is None:
        return None
    return point["peak_reserved_gib"] + (point.get("outside_allocator_gib") or 0.0)


def estimate_for(point: dict[str, Any], gpu_memory_gb: float) -> memory.MemoryEstimate:
    """The current model's estimate of the measured layout (one GPU, ZeRO-0; transformers generation, or vLLM
    colocated at the point's ``vllm_gpu_memory_utilization``)."""
    if point.get("generation") == "vllm":
        return memory.estimate(point["size"], gpus=1, gpu_memory_gb=gpu_memory_gb, lora=point["mode"] == "lora",
                               prompt_len=point["prompt_len"], completion_len=point["completion_len"],
                               generation="vllm", vllm_mode="colocate",
                               vllm_gpu_memory_utilization=point["vllm_gpu_memory_utilization"])
    return memory.estimate(point["size"], gpus=1, gpu_memory_gb=gpu_memory_gb, lora=point["mode"] == "lora",
                           prompt_len=point["prompt_len"], completion_len=point["completion_len"],
                           generation="transformers", vllm_mode="server")


def _error(estimated: float | None, measured: float | None) -> str:
    if estimated is None or measured is None:
        return "-"
    return f"{100 * (estimated - measured) / measured:+.1f} %"


def _steps(point: dict[str, Any]) -> str:
    steps = point.get("steps") or []
    if not steps:
        return "-"
    return f"{steps[-1]['seconds']:.1f}" + (" (step 1 only)" if len(steps) == 1 else "")


def render(data: dict[str, Any]) -> str:
    points = [p for p in data["points"] if p.get("generation", "transformers") == "transformers"]
    machine = points[0]["machine"] if points else {}
    gpu_gb = 141.0
    rows, errors_before, errors_now = [], [], []
    for p in points:
        est = estimate_for(p, gpu_gb)
        measured = device_peak_gib(p)
        before = p.get("estimate_before_gib")
        if p.get("fits"):
            fits = "yes"
            errors_before.append(abs((before - measured) / measured) if before else None)
            errors_now.append(abs((est.total_gib - measured) / measured))
            before_cell = f"{_num(before)} ({_error(before, measured)})"
            now_cell = f"{est.total_gib:.1f} ({_error(est.total_gib, measured)})"
        else:
            fits = "**no: out of memory**" if p.get("fits") is False else f"error: {p.get('error', '')[:60]}"
            capacity = p["machine"].get("gpu_memory_gib") or gpu_gb
            before_cell = f"{_num(before)} (said: {'fits' if before and before <= capacity else 'does not fit'})"
            now_cell = f"{est.total_gib:.1f} (says: {'fits' if est.fits else 'does not fit'})"
        trainable = f"{p['trainable_params'] / 1e6:,.1f}M" if p.get("trainable_params") else "-"
        gen_share = (f"{100 * p['generation_seconds'] / p['train_seconds']:.0f} %"
                     if p.get("generation_seconds") and p.get("train_seconds") else "-")
        tuning = "LoRA r=16" if p["mode"] == "lora" else "full"
        rows.append(f"| {p['size']} | {tuning} | {fits} | {trainable} | {_num(p.get('peak_allocated_gib'))} | "
                    f"{_num(p.get('peak_reserved_gib'))} | {_num(measured)} | "
                    f"{_num(p.get('generation_peak_allocated_gib'))} | {_steps(p)} | {gen_share} | "
                    f"{before_cell} | {now_cell} |")
    known_before = [e for e in errors_before if e is not None]
    worst_before = max(known_before) if known_before else None
    worst_now = max(errors_now) if errors_now else None
    first = points[0] if points else {}
    return Template(TEMPLATE.read_text()).substitute(
        gpu=(f"{machine.get('gpu', '?')}, {machine.get('gpu_memory_gib', '?')} GiB as PyTorch reports it "
             f"({machine.get('gpu_count', '?')} GPU on the machine)"),
        software=(f"Python {machine.get('python')}, PyTorch {machine.get('torch')}, transformers "
                  f"{machine.get('transformers')}, TRL {machine.get('trl')}, PEFT {machine.get('peft')}, "
                  f"accelerate {machine.get('accelerate')}"),
        prompt_len=first.get("prompt_len"), completion_len=first.get("completion_len"),
        results_rows="\n".join(rows), worst_before=_pct(worst_before), worst_now=_pct(worst_now),
        transformers_table=_transformers_table(gpu_gb), **_vllm_section(data["points"]))


def _vllm_section(points: list[dict[str, Any]]) -> dict[str, str]:
    """The rows of the points measured with the recipe's generation (vLLM colocated in the training process)."""
    vllm = [p for p in points if p.get("generation") == "vllm"]
    rows, errors = [], []
    for p in vllm:
        measured = device_peak_gib(p)
        est = estimate_for(p, p.get("device_total_gib") or 141.0)
        if p.get("fits") and measured:
            errors.append(abs((est.total_gib - measured) / measured))
        tuning = "LoRA r=16" if p["mode"] == "lora" else "full"
        fits = "yes" if p.get("fits") else ("**no: out of memory**" if p.get("fits") is False else "error")
        rows.append(f"| {p['size']} | {tuning} | {fits} | {_num(p.get('after_load_device_used_gib'))} | "
                    f"{_num(p.get('peak_allocated_gib'))} | {_num(p.get('peak_reserved_gib'))} | {_num(measured)} | "
                    f"{_steps(p)} | {est.vllm_gib:.2f} + {est.total_gib - est.vllm_gib:.2f} = "
                    f"{est.total_gib:.1f} ({_error(est.total_gib, measured)}) |")
    first = vllm[0] if vllm else {}
    software = first.get("machine", {})
    return {"vllm_rows": "\n".join(rows) or "| (none measured) |",
            "vllm_worst": _pct(max(errors) if errors else None),
            "vllm_utilization": str(first.get("vllm_gpu_memory_utilization", "-")),
            "vllm_version": str(software.get("vllm", "-")),
            "vllm_device_gib": _num(first.get("device_total_gib"))}


def _transformers_table(gpu_gb: float) -> str:
    head = ("| size | params | full fine-tuning, GiB | fits | LoRA, GiB | fits |\n"
            "|---|---|---|---|---|---|")
    rows = [head]
    for label, shape in memory.SIZE_CLASSES.items():
        full = memory.estimate(shape, gpu_memory_gb=gpu_gb, generation="transformers")
        lora = memory.estimate(shape, gpu_memory_gb=gpu_gb, lora=True, generation="transformers")
        rows.append(f"| {label} | {shape.params_b:.2f}B | {full.total_gib:.1f} | {'yes' if full.fits else 'no'} | "
                    f"{lora.total_gib:.1f} | {'yes' if lora.fits else 'no'} |")
    return "\n".join(rows)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f} %"
