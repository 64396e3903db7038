"""Can two processes on one GPU form an NCCL group? (What TRL's AsyncGRPOTrainer needs between the trainer and its
vLLM server for the weight sync, when both share the GPU: docs/async-grpo.md.)

    python -m benchmarks.nccl_same_gpu            # on a CUDA machine; prints each rank's outcome

On the H200 (NCCL 2.28.9, PyTorch 2.11) both ranks fail with ``ncclInvalidUsage: ... Duplicate GPU detected``.
"""

from __future__ import annotations

import os
import sys


def _rank(rank: int, port: int) -> None:
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(0)
    try:
        dist.init_process_group("nccl", rank=rank, world_size=2, device_id=torch.device("cuda", 0))
        tensor = torch.ones(4, device="cuda") * (rank + 1)
        dist.broadcast(tensor, src=0)
        torch.cuda.synchronize()
        print(f"rank {rank}: broadcast ok {tensor.tolist()}", flush=True)
        dist.destroy_process_group()
    except Exception as exc:  # noqa: BLE001 - the outcome is what this probe reports
        print(f"rank {rank}: {type(exc).__name__}: {str(exc)[:600]}", flush=True)


def main() -> int:
    import torch
    import torch.multiprocessing as mp

    if not torch.cuda.is_available():
        print("no CUDA GPU on this machine", file=sys.stderr)
        return 2
    from verifier_service.testing import free_port

    mp.spawn(_rank, args=(free_port(),), nprocs=2, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
