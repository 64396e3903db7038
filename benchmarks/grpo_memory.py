"""Measures GPU memory and step time of the GRPO recipe per model size class and tuning mode.

    python -m benchmarks.grpo_memory                       # 0.5B 1.5B 3B 7B x full, LoRA on this GPU
    python -m benchmarks.grpo_memory --sizes 0.5B --modes lora --steps 3
    python -m benchmarks.grpo_memory --render              # docs/grpo-memory.md from the measurements file

Each (size, mode) point runs in a fresh process: a model of the published Qwen2.5 shape with random weights (saved
once as an ordinary Hugging Face folder, since TRL loads the policy and, with ``beta > 0``, the reference model from
the path), a tokenizer of the same vocabulary, prompts of exactly ``prompt_len`` tokens, and ``trainer.train``'s own
``build_trainer`` on the recipe's run config with ``generation: transformers`` (vLLM is not used). It records the
peak allocated and reserved CUDA memory (PyTorch's caching allocator) of the generation phase and of the whole step,
the memory the process holds on the device outside the allocator (CUDA context, cuBLAS workspaces), and the step
times. A point that runs out of memory is recorded as not fitting. Results merge into ``benchmarks/grpo_memory.json``
keyed by (GPU, size, mode); ``--render`` turns that file and the current memory model into ``docs/grpo-memory.md``.

On a machine without a CUDA GPU it says so and exits with status 2 (``--device cpu`` runs the pipeline on a tiny
shape for tests; it measures no memory).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "grpo_memory.json"
DOC = ROOT / "docs" / "grpo-memory.md"
GIB = 1024**3
DEFAULT_SIZES = ("0.5B", "1.5B", "3B", "7B")
MODES = ("full", "lora")
NO_GPU_EXIT = 2


# ---------------------------------------------------------------------------
# One point, in its own process
# ---------------------------------------------------------------------------


def _shape(size: str):
    from trainer import memory

    if size == "tiny":  # the CPU pipeline test: a Qwen2 shape of a few million parameters
        return memory.ModelShape(label="tiny", num_layers=2, hidden_size=64, num_heads=4, num_kv_heads=2,
                                 head_dim=16, vocab_size=512, intermediate_size=128, tie_embeddings=True)
    return memory.parse_size(size)


def build_model_dir(size: str, directory: Path, device: str) -> Path:
    """A random-weight model of the size class's published shape and a word-level tokenizer of its vocabulary."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    shape = _shape(size)
    path = directory / f"qwen2.5-{size}-random"
    if (path / "config.json").exists() and (path / "tokenizer.json").exists():
        return path
    path.mkdir(parents=True, exist_ok=True)
    # Token 0 pads, 1 ends a completion; the rest are words "w2", "w3", ... so that a prompt of n words is n tokens.
    vocab = {"<|endoftext|>": 0, "<|im_end|>": 1, **{f"w{i}": i for i in range(2, shape.vocab_size)}}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<|endoftext|>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.save_pretrained(path)
    config = Qwen2Config(vocab_size=shape.vocab_size, hidden_size=shape.hidden_size,
                         intermediate_size=shape.intermediate_size, num_hidden_layers=shape.num_layers,
                         num_attention_heads=shape.num_heads, num_key_value_heads=shape.num_kv_heads,
                         head_dim=shape.head_dim, tie_word_embeddings=shape.tie_embeddings,
                         max_position_embeddings=32768, rope_theta=1000000.0, bos_token_id=0, eos_token_id=1,
                         pad_token_id=0)
    with torch.device(device):
        model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = 1
    model.generation_config.pad_token_id = 0
    model.to(torch.bfloat16).save_pretrained(path)  # bf16 on disk, as published checkpoints are
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return path


def _prompts(vocab_size: int, prompt_len: int, count: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [{"prompt": " ".join(f"w{rng.randrange(2, vocab_size)}" for _ in range(prompt_len))}
            for _ in range(count)]


def _hash_reward(salt: str):
    """A cheap in-process reward that varies within a group (so advantages and gradients are not zero)."""
    import hashlib

    def reward(completions, **kwargs):
        return [int(hashlib.sha256((salt + str(c)).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF for c in completions]

    reward.__name__ = f"{salt}_reward"
    return reward


def run_point(size: str, mode: str, *, steps: int, prompt_len: int, completion_len: int, model_root: Path,
              device: str, generation: str = "transformers", vllm_gpu_memory_utilization: float = 0.3
              ) -> dict[str, Any]:
    """Runs ``steps`` GRPO steps of the recipe on one (size, mode); returns the measurement record.

    ``generation="vllm"``: the recipe's generation, vLLM colocated in this process at
    ``vllm_gpu_memory_utilization`` (without sleep mode, as ``RunConfig`` defaults): its weights, KV cache and CUDA
    graphs then count in this process's device memory too."""
    import torch
    from datasets import Dataset
    from transformers import PreTrainedTokenizerFast, TrainerCallback

    from trainer.config import RunConfig
    from trainer.grpo import build_trainer

    shape = _shape(size)
    cuda = device == "cuda"
    model_dir = build_model_dir(size, model_root, device)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    out_dir = tempfile.mkdtemp(prefix="grpo-mem-")
    vllm = generation == "vllm"
    if vllm:
        from trainer.vllm_env import colocate_environment

        colocate_environment()  # as trainer train does, before TRL starts vLLM in this process
    config = RunConfig(model=str(model_dir), dataset="(random prompts)", output_dir=out_dir,
                       generation=generation, vllm_gpu_memory_utilization=vllm_gpu_memory_utilization,
                       lora=mode == "lora", max_steps=steps, logging_steps=1,
                       save_steps=10**9, max_completion_length=completion_len, use_cpu=not cuda, bf16=cuda,
                       skip_gates=True, grpo_overrides={"save_strategy": "no"})  # a checkpoint would fill the disk
    per_step_prompts = config.per_device_train_batch_size * config.gradient_accumulation_steps // config.num_generations
    dataset = Dataset.from_list(_prompts(shape.vocab_size, prompt_len, per_step_prompts * (steps + 1), seed=3407))
    tokenizer = PreTrainedTokenizerFast.from_pretrained(model_dir)  # AutoTokenizer would pick Qwen2Tokenizer
    record: dict[str, Any] = {"steps": []}

    class Probe(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if cuda:
                torch.cuda.synchronize()
            step = {"step": state.global_step, "seconds": round(time.perf_counter() - self.t0, 3)}
            if cuda:
                step["peak_allocated_gib"] = torch.cuda.max_memory_allocated() / GIB
                step["peak_reserved_gib"] = torch.cuda.max_memory_reserved() / GIB
                free, total = torch.cuda.mem_get_info()
                step["device_used_gib"] = (total - free) / GIB
            record["steps"].append(step)

    trainer = build_trainer(config, reward_funcs=[_hash_reward("format"), _hash_reward("correctness")],
                            dataset=dataset, tokenizer=tokenizer, callbacks=[Probe()])
    generate = trainer._generate_and_score_completions
    phases: dict[str, float] = {}

    def generation_phase(*args, **kwargs):  # the peak of generation + scoring (reference log-probs included)
        if cuda:
            torch.cuda.synchronize()
            before = torch.cuda.max_memory_allocated()
            phases["pre_generation_peak_reserved_gib"] = max(phases.get("pre_generation_peak_reserved_gib", 0.0),
                                                             torch.cuda.max_memory_reserved() / GIB)
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        result = generate(*args, **kwargs)
        if cuda:
            torch.cuda.synchronize()
            phases["generation_peak_allocated_gib"] = max(phases.get("generation_peak_allocated_gib", 0.0),
                                                          torch.cuda.max_memory_allocated() / GIB)
            phases["generation_peak_reserved_gib"] = max(phases.get("generation_peak_reserved_gib", 0.0),
                                                         torch.cuda.max_memory_reserved() / GIB)
            # keep the whole-run peak: what was reached before this phase still counts
            torch.cuda.reset_peak_memory_stats()
            phases["pre_generation_peak_allocated_gib"] = max(phases.get("pre_generation_peak_allocated_gib", 0.0),
                                                              before / GIB)
        phases["generation_seconds"] = phases.get("generation_seconds", 0.0) + time.perf_counter() - t0
        return result

    trainer._generate_and_score_completions = generation_phase
    if cuda:
        torch.cuda.synchronize()
        record["after_load_allocated_gib"] = torch.cuda.memory_allocated() / GIB
        record["after_load_reserved_gib"] = torch.cuda.memory_reserved() / GIB
        free, total = torch.cuda.mem_get_info()
        record["after_load_device_used_gib"] = (total - free) / GIB  # with vLLM: its weights, KV cache, graphs
    t0 = time.perf_counter()
    try:
        trainer.train()
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    record["train_seconds"] = round(time.perf_counter() - t0, 2)
    lengths = [e["completions/mean_length"] for e in trainer.state.log_history if "completions/mean_length" in e]
    record["completion_mean_length"] = sum(lengths) / len(lengths) if lengths else None
    record.update(phases)
    if cuda:
        free, total = torch.cuda.mem_get_info()
        record["peak_allocated_gib"] = max([*(s["peak_allocated_gib"] for s in record["steps"]),
                                            phases.get("generation_peak_allocated_gib", 0.0),
                                            phases.get("pre_generation_peak_allocated_gib", 0.0)])
        record["peak_reserved_gib"] = max([*(s["peak_reserved_gib"] for s in record["steps"]),
                                           phases.get("generation_peak_reserved_gib", 0.0),
                                           phases.get("pre_generation_peak_reserved_gib", 0.0)])
        # Device memory this process holds outside the caching allocator (CUDA context, cuBLAS/cuDNN workspaces).
        record["outside_allocator_gib"] = ((total - free) - torch.cuda.memory_reserved()) / GIB
        record["device_total_gib"] = total / GIB
    record["trainable_params"] = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    record["param_dtype"] = str(next(trainer.model.parameters()).dtype).replace("torch.", "")
    record["reference_model"] = trainer.ref_model is not None
    if trainer.ref_model is not None:
        record["reference_dtype"] = str(next(trainer.ref_model.parameters()).dtype).replace("torch.", "")
    return record


# ---------------------------------------------------------------------------
# The driver: one process per point, results merged into the measurements file
# ---------------------------------------------------------------------------


def _machine() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__}
    for name in ("transformers", "trl", "peft", "accelerate", "vllm"):
        try:
            info[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001 - a version we cannot read is simply not reported
            info[name] = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / GIB, 1),
                    gpu_count=torch.cuda.device_count())
    return info


def _child(args: argparse.Namespace) -> int:
    try:
        record = run_point(args.point_size, args.point_mode, steps=args.steps, prompt_len=args.prompt_len,
                           completion_len=args.completion_len, model_root=Path(args.model_root), device=args.device,
                           generation=args.generation,
                           vllm_gpu_memory_utilization=args.vllm_gpu_memory_utilization)
        record["fits"] = True
    except Exception as exc:  # noqa: BLE001 - an OOM (or any failure) is the measurement's result, reported
        import traceback

        import torch

        traceback.print_exc()
        oom = isinstance(exc, torch.OutOfMemoryError) or "out of memory" in str(exc).lower()
        record = {"fits": False if oom else None, "error": f"{type(exc).__name__}: {str(exc)[:400]}"}
        if oom and torch.cuda.is_available():
            record["peak_allocated_gib"] = torch.cuda.max_memory_allocated() / GIB
            record["peak_reserved_gib"] = torch.cuda.max_memory_reserved() / GIB
    Path(args.point_out).write_text(json.dumps(record))
    return 0


def _key(point: dict[str, Any]) -> tuple:
    return (point.get("gpu"), point["size"], point["mode"], point["prompt_len"], point["completion_len"],
            point.get("generation", "transformers"))


def merge(points: list[dict[str, Any]], path: Path = RESULTS) -> dict[str, Any]:
    data = json.loads(path.read_text()) if path.exists() else {"points": []}
    fresh = {_key(p) for p in points}
    data["points"] = [p for p in data["points"] if _key(p) not in fresh] + points
    data["points"].sort(key=lambda p: (p.get("gpu") or "", _size_order(p["size"]), p["mode"]))
    path.write_text(json.dumps(data, indent=1) + "\n")
    return data


def _size_order(size: str) -> float:
    try:
        return float(size.rstrip("bB"))
    except ValueError:
        return 0.0


def measure(args: argparse.Namespace) -> int:
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA GPU on this machine: benchmarks.grpo_memory measures GPU memory and needs one "
              "(the memory model itself: python -m trainer.memory)", file=sys.stderr)
        return NO_GPU_EXIT
    machine = _machine()
    model_root = Path(args.model_root)
    points = []
    for size in args.sizes:
        for mode in args.modes:
            print(f"== {size} {mode}: {args.steps} GRPO steps", flush=True)
            with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
                out = handle.name
            cmd = [sys.executable, "-m", "benchmarks.grpo_memory", "--point-size", size, "--point-mode", mode,
                   "--point-out", out, "--steps", str(args.steps), "--prompt-len", str(args.prompt_len),
                   "--completion-len", str(args.completion_len), "--model-root", str(model_root),
                   "--device", args.device, "--generation", args.generation,
                   "--vllm-gpu-memory-utilization", str(args.vllm_gpu_memory_utilization)]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
            try:
                record = json.loads(Path(out).read_text())
            except (OSError, ValueError):
                record = {"fits": None, "error": f"the measuring process exited with {proc.returncode} "
                                                 "and wrote no result"}
            Path(out).unlink(missing_ok=True)
            point = {"size": size, "mode": mode, "gpu": machine.get("gpu"), "steps_run": args.steps,
                     "generation": args.generation,
                     **({"vllm_mode": "colocate", "vllm_gpu_memory_utilization": args.vllm_gpu_memory_utilization}
                        if args.generation == "vllm" else {}),
                     "prompt_len": args.prompt_len, "completion_len": args.completion_len,
                     "wall_seconds": round(time.perf_counter() - t0, 1), "machine": machine, **record}
            points.append(point)
            summary = {k: point.get(k) for k in ("fits", "peak_allocated_gib", "peak_reserved_gib",
                                                 "generation_peak_allocated_gib", "error")}
            print(f"   {json.dumps(summary, default=str)}", flush=True)
            if args.device == "cuda":  # after each point, so a run cut short keeps what it measured
                merge([point], Path(args.results))
    if args.device == "cuda":
        print(f"merged {len(points)} point(s) into {args.results}")
    else:
        print(json.dumps(points, indent=1, default=str))
    return 0 if all(p.get("fits") is not None for p in points) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.grpo_memory", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=lambda s: s.split(","), default=list(DEFAULT_SIZES))
    parser.add_argument("--modes", type=lambda s: s.split(","), default=list(MODES))
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps per point (the peak comes in step 1)")
    parser.add_argument("--prompt-len", type=int, default=512)
    parser.add_argument("--completion-len", type=int, default=512)
    parser.add_argument("--model-root", default=os.path.join(tempfile.gettempdir(), "grpo-memory-models"))
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: run the pipeline on the tiny shape (a test); nothing is measured")
    parser.add_argument("--generation", choices=("transformers", "vllm"), default="transformers",
                        help="vllm: the recipe's generation, vLLM colocated at --vllm-gpu-memory-utilization")
    parser.add_argument("--vllm-gpu-memory-utilization", type=float, default=0.3)
    parser.add_argument("--render", action="store_true", help="write docs/grpo-memory.md from the measurements")
    parser.add_argument("--point-size", help=argparse.SUPPRESS)
    parser.add_argument("--point-mode", help=argparse.SUPPRESS)
    parser.add_argument("--point-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for mode in args.modes:
        if mode not in MODES:
            parser.error(f"--modes: {mode!r} is not one of {', '.join(MODES)}")
    if args.render:
        from benchmarks.grpo_memory_report import render

        DOC.write_text(render(json.loads(Path(args.results).read_text())))
        print(f"wrote {DOC}")
        return 0
    if args.point_size:
        return _child(args)
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
