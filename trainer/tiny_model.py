"""A tiny random chat model and tokenizer built offline (no hub): for CPU tests and smoke runs."""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# For runs of the tool loop with a random model (which would never write a tool call): ChatML with tool calls;
# after a user turn the generation prompt *is* a run_python call of the user's text (so the model's completion
# starts after it and TRL's parser, which reads from the assistant header on, finds the call).
FORCED_TOOL_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}<|im_start|>assistant\n{{ message['content'] or '' }}"
    "{%- for call in message.get('tool_calls') or [] %}<tool_call>\n"
    '{"name": "{{ call["function"]["name"] }}", "arguments": {{ call["function"]["arguments"] | tojson }}}\n'
    "</tool_call>{%- endfor %}<|im_end|>\n"
    "{%- elif message['role'] == 'tool' %}<|im_start|>tool\n{{ message['content'] }}<|im_end|>\n"
    "{%- else %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n"
    "{%- if messages[-1]['role'] == 'user' %}<tool_call>\n"
    '{"name": "run_python", "arguments": {"code": {{ messages[-1]["content"] | tojson }}}}\n</tool_call>\n'
    "{%- endif %}{%- endif %}"
)
FORCED_TOOL_RESPONSE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {"open": "<tool_call>", "close_pattern": r"</tool_call>\s*", "repeats": True, "content": "json",
                       "transform": {"type": "function", "function": "{content}"}},
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}


def build_tiny_model(path: Path, hidden_size: int = 64, num_attention_heads: int = 4,
                     max_position_embeddings: int = 512) -> Path:
    """A random 2-layer Qwen2 chat model with a 400-token BPE; vLLM's attention kernels want a head size of at least
    32 and room for the tiny tokenizer's long prompts (``hidden_size=256, max_position_embeddings=4096``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    lines = [f"def f{i}(x):\n    return x + {i}\n```python\nprint({i} * {i})\n```" for i in range(200)]
    lines += ["abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 <answer> </answer> user assistant"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=400, special_tokens=special,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        bos_token=None)
    tokenizer.chat_template = CHAT_TEMPLATE
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=2, num_attention_heads=num_attention_heads, num_key_value_heads=2,
                         max_position_embeddings=max_position_embeddings,
                         tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
