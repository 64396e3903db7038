"""The end-of-text tokens a trainer leaves on a response, and taking them off.

OpenRLHF decodes each query with ``skip_special_tokens=False``: a response that ended with the tokenizer's
end-of-text token carries it as text (``...return a + b<|im_end|>``), and a raw program with that tail fails to
compile although the model wrote it right. ``strip_trailing`` takes such tokens (and the whitespace between
them) off the end of a response only: a token inside the text is the model's and stays.
"""

from __future__ import annotations

# The end-of-sequence / end-of-turn tokens of the common chat tokenizers (Qwen, Llama 3, GPT-2/NeoX, Mistral,
# Gemma, Phi, DeepSeek, SmolLM, gpt-oss).
DEFAULT_TOKENS = ("<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "</s>", "<eos>",
                  "<end_of_turn>", "<|end|>", "<|return|>", "<\uff5cend\u2581of\u2581sentence\uff5c>",
                  "<|end\u2581of\u2581sentence|>", "<|eos|>")
DEFAULT_SETTING = ",".join(DEFAULT_TOKENS)


def parse_tokens(setting: str) -> tuple[str, ...]:
    """A comma-separated setting (``''``: strip nothing)."""
    return tuple(t.strip() for t in setting.split(",") if t.strip())


def strip_trailing(text: str, tokens: tuple[str, ...] = DEFAULT_TOKENS) -> str:
    """``text`` less every special token (and the whitespace around them) at its very end."""
    if not tokens:
        return text
    end = len(text)
    while True:
        trimmed = text[:end].rstrip()
        for token in tokens:
            if trimmed.endswith(token):
                end = len(trimmed) - len(token)
                break
        else:
            break
    return text[:end]
