"""``trainer sample``: N completions per prompt from the model, in the ``verify`` JSONL form.

The two pre-training gates read samples of the model being trained: the
inspection gate (a person reads 50-100 scored samples) and the base-rate gate
(does the model ever succeed at low temperature?). Each output line is
``{"id": "<prompt_index>-<sample_index>", "prompt": ..., "completion": ..., "spec": ...}``,
which ``verifier-service verify`` and ``verifier-service inspect`` read as they are.

Generation uses vLLM when it is installed and a GPU is present (``backend="auto"``),
else transformers (CPU or GPU).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import random
from pathlib import Path
from typing import Any

from trainer.errors import ConfigError

log = logging.getLogger(__name__)
BACKENDS = ("auto", "transformers", "vllm")
PROMPT_BATCH_SEQUENCES = 256
"""On a GPU, transformers generates for several prompts at once (left-padded), up to this many sequences."""
CPU_BATCH_SEQUENCES = 32
"""The same on a CPU."""


def choose_prompts(dataset, count: int, seed: int) -> list[int]:
    """Indices of ``count`` prompts drawn without replacement (all of them when count <= 0 or too big)."""
    indices = list(range(len(dataset)))
    if 0 < count < len(indices):
        indices = sorted(random.Random(seed).sample(indices, count))
    return indices


def parse_spec(raw: Any, where: str) -> dict:
    try:
        spec = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as exc:
        raise ConfigError(f"{where}: the spec column does not hold JSON: {exc}") from exc
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: the spec column must hold a JSON object")
    return spec


def _resolve_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if backend != "auto":
        if backend == "vllm" and importlib.util.find_spec("vllm") is None:
            raise ConfigError("vLLM is not installed (pip install vllm), or use --backend transformers")
        return backend
    if importlib.util.find_spec("vllm") is not None:
        import torch

        if torch.cuda.is_available():
            return "vllm"
    return "transformers"


def _render(tokenizer, prompt: Any) -> str:
    """A chat prompt through the model's chat template; a plain string prompt as it is."""
    if isinstance(prompt, list):
        return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    if isinstance(prompt, str):
        return prompt
    raise ConfigError(f"a prompt must be a string or a list of chat messages, not {type(prompt).__name__}")


def _generate_transformers(model_path: str, prompts: list[Any], n: int, temperature: float,
                           max_new_tokens: int, seed: int, prompt_batch: int | None = None) -> list[list[str]]:
    """``n`` completions per prompt; ``prompt_batch`` prompts per ``generate`` call (default: up to
    PROMPT_BATCH_SEQUENCES sequences on a GPU, CPU_BATCH_SEQUENCES on a CPU)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed

    set_seed(seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_path)
        # bf16 checkpoints stay bf16 on a GPU; on a CPU fp32 is several times faster than emulated bf16
        dtype = "auto" if device == "cuda" else torch.float32
        model = AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype).to(device)
    except Exception as exc:
        raise ConfigError(f"cannot load the model {model_path!r}: {exc}") from exc
    model.eval()
    sampling = dict(do_sample=True, temperature=temperature, top_p=1.0, top_k=0) if temperature > 0 \
        else dict(do_sample=False)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    tokenizer.padding_side = "left"  # decoder-only: pad on the left so every row continues its own prompt
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token_id = pad
    per_batch = prompt_batch or max(1, (PROMPT_BATCH_SEQUENCES if device == "cuda" else CPU_BATCH_SEQUENCES) // n)
    out: list[list[str]] = []
    for start in range(0, len(prompts), per_batch):
        texts = [_render(tokenizer, p) for p in prompts[start:start + per_batch]]
        inputs = tokenizer(texts, return_tensors="pt", add_special_tokens=False, padding=True).to(device)
        per_prompt = n if temperature > 0 else 1  # greedy decoding gives n identical completions: generate one
        with torch.no_grad():
            generated = model.generate(**inputs, max_new_tokens=max_new_tokens, num_return_sequences=per_prompt,
                                       pad_token_id=pad, **sampling)
        decoded = tokenizer.batch_decode(generated[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
        out.extend(decoded[i * per_prompt:(i + 1) * per_prompt] * (n // per_prompt) for i in range(len(texts)))
    return out


VLLM_GPU_MEMORY_UTILIZATION = 0.3
"""The sampling engine's share of the GPU (vLLM's own default, 0.9, leaves too little for anything else in the
process: a second engine, or the colocated trainer that the e2e pipeline starts after its gates)."""
_ENGINES: dict[tuple, Any] = {}


def vllm_engine(model_path: str, seed: int, gpu_memory_utilization: float = VLLM_GPU_MEMORY_UTILIZATION):
    """One vLLM engine per (model, seed, share), kept for the process's later calls (the gates and an evaluation
    sample the same model: starting vLLM costs 25-45 s); an engine of another model is released first."""
    key = (model_path, seed, gpu_memory_utilization)
    if key not in _ENGINES:
        release_vllm()
        from trainer.vllm_env import sampler_environment

        sampler_environment()  # VLLM_USE_FLASHINFER_SAMPLER=0 where FlashInfer is not installed
        from vllm import LLM

        try:
            _ENGINES[key] = LLM(model=model_path, seed=seed, gpu_memory_utilization=gpu_memory_utilization)
        except Exception as exc:
            raise ConfigError(f"vLLM cannot load the model {model_path!r}: {exc}") from exc
    return _ENGINES[key]


def release_vllm() -> None:
    """Drops the kept sampling engine(s) and returns their GPU memory (before training starts its own)."""
    if not _ENGINES:
        return
    import gc

    _ENGINES.clear()
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def _generate_vllm(model_path: str, prompts: list[Any], n: int, temperature: float, max_new_tokens: int,
                   seed: int) -> list[list[str]]:
    from transformers import AutoTokenizer
    from vllm import SamplingParams

    llm = vllm_engine(model_path, seed)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    per_prompt = n if temperature > 0 else 1  # greedy decoding gives n identical completions: generate one
    params = SamplingParams(n=per_prompt, temperature=temperature, max_tokens=max_new_tokens)  # no top-k/top-p
    # token ids as the transformers path makes them (the chat template already holds the special tokens)
    inputs = [{"prompt_token_ids": tokenizer(_render(tokenizer, p), add_special_tokens=False)["input_ids"]}
              for p in prompts]
    outputs = llm.generate(inputs, params, use_tqdm=True)
    return [[c.text for c in o.outputs] * (n // per_prompt) for o in outputs]


def sample_completions(model: str, dataset, *, n: int, temperature: float, max_new_tokens: int,
                       spec_column: str = "verification", prompts: int = 0, seed: int = 3407,
                       backend: str = "auto") -> list[dict]:
    """``n`` completions for each chosen prompt, as verify-JSONL rows with ``prompt``."""
    if n < 1:
        raise ConfigError("the number of samples per prompt must be at least 1")
    if temperature < 0:
        raise ConfigError("temperature must not be negative")
    indices = choose_prompts(dataset, prompts, seed)
    rows = [dataset[i] for i in indices]
    specs = [parse_spec(row[spec_column], f"prompt {i}") for i, row in zip(indices, rows, strict=True)]
    chosen = _resolve_backend(backend)
    log.info("sampling %d x %d completions with %s at temperature %g", len(rows), n, chosen, temperature)
    generate = _generate_vllm if chosen == "vllm" else _generate_transformers
    texts = generate(model, [row["prompt"] for row in rows], n, temperature, max_new_tokens, seed)
    samples = []
    for index, row, spec, completions in zip(indices, rows, specs, texts, strict=True):
        for j, completion in enumerate(completions):
            samples.append({"id": f"{index}-{j}", "prompt": row["prompt"], "completion": completion, "spec": spec})
    return samples


def write_samples(path: Path, samples: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
