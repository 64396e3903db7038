"""Exceptions of the trainer package:

    TrainerError
    ├── ConfigError      the run config is refused (says which rule and how to override, if allowed)
    └── RewardError      the reward functions cannot work (bad dataset column, no verifier)
"""


class TrainerError(Exception):
    """Root of every exception this package raises on purpose."""


class ConfigError(TrainerError):
    """The run configuration breaks a rule of the recipe."""


class RewardError(TrainerError):
    """The remote reward functions cannot score this batch's inputs."""
