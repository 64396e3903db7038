"""The recipe's ``GRPOTrainer``, built from a validated run config.

One construction shared by ``trainer train`` and the GPU memory measurement (``benchmarks/grpo_memory.py``), so
that what is measured is what is trained. It imports nothing of the verifier client.
"""

from __future__ import annotations

from trainer.config import RunConfig


def build_trainer(config: RunConfig, *, reward_funcs: list, dataset, tokenizer, callbacks: list):
    """The recipe's ``GRPOTrainer`` for a validated run config (LoRA on every linear layer when ``config.lora``)."""
    from trl import GRPOConfig, GRPOTrainer

    kwargs = config.to_grpo_kwargs()
    if "activation_checkpointing" in GRPOConfig.__dataclass_fields__:  # transformers >= 5.2x renamed it
        kwargs["activation_checkpointing"] = kwargs.pop("gradient_checkpointing")
    args = GRPOConfig(**kwargs)
    peft_config = None
    if config.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, target_modules="all-linear",
                                 task_type="CAUSAL_LM")
    return GRPOTrainer(model=config.model, reward_funcs=reward_funcs, args=args, train_dataset=dataset,
                       processing_class=tokenizer, peft_config=peft_config, callbacks=callbacks)
