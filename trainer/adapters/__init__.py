"""In-process reward hooks of other trainers that score through the verifier service:

- ``trainer.adapters.verl``: verl's ``custom_reward_function`` (``compute_score``, single and batched);
- ``trainer.adapters.openrlhf``: OpenRLHF's ``--remote_rm_url /path/to/reward_func.py`` (``reward_func``).

Both reach the service at ``RLVR_VERIFIER_ADDRESS`` (HOST:PORT of its gRPC port, default localhost:50051) with
the API key of ``RLVR_VERIFIER_API_KEY``, through one connection per process (``remote.py``).
"""
