"""The recipe's ``GRPOTrainer``, built from a validated run config.

One construction shared by ``trainer train`` and the GPU memory measurement (``benchmarks/grpo_memory.py``), so
that what is measured is what is trained. It imports nothing of the verifier client.
"""

from __future__ import annotations

from trainer.config import RunConfig


def build_trainer(config: RunConfig, *, reward_funcs: list, dataset, tokenizer, callbacks: list):
    """The recipe's ``GRPOTrainer`` for a validated run config (LoRA on every linear layer when ``config.lora``);
    ``trainer: async_grpo`` builds TRL's experimental ``AsyncGRPOTrainer`` instead (its reward functions must
    pickle: they are scored in a spawned child process)."""
    if config.trainer == "async_grpo":
        return _build_async_trainer(config, reward_funcs=reward_funcs, dataset=dataset, tokenizer=tokenizer,
                                    callbacks=callbacks)
    from trl import GRPOConfig, GRPOTrainer

    kwargs = config.to_grpo_kwargs()
    if "activation_checkpointing" in GRPOConfig.__dataclass_fields__:  # transformers >= 5.2x renamed it
        kwargs["activation_checkpointing"] = kwargs.pop("gradient_checkpointing")
    args = GRPOConfig(**kwargs)
    return GRPOTrainer(model=config.model, reward_funcs=reward_funcs, args=args, train_dataset=dataset,
                       processing_class=tokenizer, peft_config=_peft_config(config), callbacks=callbacks)


def _peft_config(config: RunConfig):
    if not config.lora:
        return None
    from peft import LoraConfig

    return LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, target_modules="all-linear",
                      task_type="CAUSAL_LM")


def _build_async_trainer(config: RunConfig, *, reward_funcs: list, dataset, tokenizer, callbacks: list):
    from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

    return AsyncGRPOTrainer(model=config.model, reward_funcs=reward_funcs,
                            args=AsyncGRPOConfig(**config.to_async_grpo_kwargs()),
                            train_dataset=dataset, processing_class=tokenizer, peft_config=_peft_config(config),
                            callbacks=callbacks)
