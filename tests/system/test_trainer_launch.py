"""`trainer train --launch`: the accelerate config of the plan, the GPU split, the vLLM server check, and GRPO in two
CPU processes (torchrun, gloo) against the real verifier service, each process sending its own batches."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from trainer.config import RunConfig
from trainer.errors import ConfigError
from trainer.launch import accelerate_config, check_gpu_split, check_vllm_server, write_accelerate_config
from verifier_service.testing import ServedProcess, free_port

from support.trainer_smoke import OFFLINE_ENV, ROOT, tiny_run, trainer_cli, write_smoke_config
from support.wait import wait_for

GPU = dict(generation="vllm", model="org/model")


def _accelerate_accepts(path):
    """accelerate's own reader of a config file (what `accelerate launch --config_file` parses)."""
    from accelerate.commands.config.config_args import load_config_from_file

    return load_config_from_file(str(path))


@pytest.mark.parametrize("changes, distributed, extra", [
    (dict(num_gpus=3, zero_stage=2), "DEEPSPEED", {"deepspeed_config": {"zero_stage": 2}}),
    (dict(num_gpus=2, zero_stage=3), "DEEPSPEED", {"deepspeed_config": {"zero_stage": 3, "zero3_init_flag": True}}),
    (dict(num_gpus=2, sharding="fsdp2"), "FSDP", {"fsdp_config": {"fsdp_version": 2}}),
    (dict(num_gpus=2), "MULTI_GPU", {}),
    (dict(num_gpus=1), "NO", {}),
])
def test_accelerate_config_carries_the_plan(tmp_path, changes, distributed, extra):
    config = RunConfig(**GPU, **changes)
    config.validate()
    run = tmp_path / "run.yaml"
    path = write_accelerate_config(config, run)
    assert path == tmp_path / "run.accelerate.yaml"
    data = yaml.safe_load(path.read_text())
    assert data["distributed_type"] == distributed
    assert data["num_processes"] == config.num_gpus and data["mixed_precision"] == "bf16"
    for key, sub in extra.items():
        assert sub.items() <= data[key].items()
    loaded = _accelerate_accepts(path)
    assert loaded.num_processes == config.num_gpus and str(loaded.distributed_type).endswith(distributed)


def test_cpu_processes_go_through_torchrun():
    config = RunConfig(use_cpu=True, bf16=False, generation="transformers", num_processes=2,
                       per_device_train_batch_size=4, gradient_accumulation_steps=1)
    config.validate()
    data = accelerate_config(config)
    assert data["use_cpu"] is True and data["num_processes"] == 2 and data["mixed_precision"] == "no"
    assert data["distributed_type"] == "MULTI_GPU"  # the torchrun launcher; the processes join as MULTI_CPU


def test_the_plan_becomes_the_launch(tmp_path):
    out = tmp_path / "run.yaml"
    proc = trainer_cli("config", "--model-size", "7B", "--gpus", "4", "--gpu-memory", "80", "--model", "m",
                       "--dataset", "d.jsonl", "--output", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = yaml.safe_load(out.read_text())
    launch = yaml.safe_load((tmp_path / "run.accelerate.yaml").read_text())
    assert run["vllm_mode"] == "server" and run["vllm_gpu_ids"] == "0" and run["gpu_ids"] == "1,2,3"
    assert launch["num_processes"] == run["num_gpus"] == 3
    assert launch["distributed_type"] == "DEEPSPEED" and launch["deepspeed_config"]["zero_stage"] == run["zero_stage"]
    assert f"ZeRO stage: {run['zero_stage']}" in proc.stdout


def test_training_and_vllm_gpus_kept_apart():
    assert check_gpu_split(RunConfig(**GPU, num_gpus=1, vllm_gpu_ids="0")) == [1]
    assert check_gpu_split(RunConfig(**GPU, num_gpus=2, vllm_gpu_ids="1")) == [0, 2]
    with pytest.raises(ConfigError, match="GPU\\(s\\) 1 are given both to training"):
        check_gpu_split(RunConfig(**GPU, num_gpus=2, gpu_ids="0,1", vllm_gpu_ids="1"))
    with pytest.raises(ConfigError, match="names 1 GPU"):
        check_gpu_split(RunConfig(**GPU, num_gpus=2, gpu_ids="1"))
    with pytest.raises(ConfigError, match="comma-separated GPU indices"):
        check_gpu_split(RunConfig(**GPU, gpu_ids="cuda:1"))


def test_launch_refuses_overlapping_gpus_in_one_line(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(dict(model="m", dataset="d.jsonl", generation="vllm", vllm_mode="server",
                                        num_gpus=1, gpu_ids="0", vllm_gpu_ids="0")))
    proc = trainer_cli("train", "--config", str(path), "--launch")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "keep them apart" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "run.accelerate.yaml").exists()


class _VLLMEndpoints(BaseHTTPRequestHandler):
    """The two endpoints of `trl vllm-serve` the launch reads: /health and /v1/models (vLLM's OpenAI server)."""

    model = "org/model"

    def do_GET(self):
        if self.path.rstrip("/") == "/health":
            body = b""
        elif self.path == "/v1/models":
            body = json.dumps({"object": "list", "data": [{"id": self.model, "object": "model"}]}).encode()
        else:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def vllm_endpoints():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _VLLMEndpoints)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_vllm_server_checked_first(vllm_endpoints):
    config = RunConfig(**GPU, vllm_mode="server", vllm_server_port=vllm_endpoints)
    assert check_vllm_server(config) == "org/model"
    with pytest.raises(ConfigError, match="serves org/model, not the run's model other/model"):
        check_vllm_server(RunConfig(generation="vllm", model="other/model", vllm_mode="server",
                                    vllm_server_port=vllm_endpoints))


def test_unreachable_vllm_server_is_one_line(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(dict(model="m", dataset="d.jsonl", generation="vllm", vllm_mode="server",
                                        num_gpus=1, vllm_gpu_ids="0", vllm_server_port=free_port())))
    proc = trainer_cli("train", "--config", str(path), "--launch")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "vLLM server at http://127.0.0.1:" in proc.stderr and "unreachable" in proc.stderr


@pytest.mark.docker
def test_two_cpu_processes_each_send_their_own_batches(service, tmp_path):
    model, data, out = tiny_run(tmp_path)
    # 2 processes x 4 completions = one prompt's group of 8 per step; each process verifies its own 4
    path = write_smoke_config(tmp_path / "run.yaml", model, data, out, service.address, num_processes=2,
                              per_device_train_batch_size=4, max_steps=2, max_completion_length=12)
    proc = trainer_cli("train", "--config", str(path), "--launch")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "launching 2 training process(es) on the CPU" in proc.stderr
    launch = yaml.safe_load((tmp_path / "run.accelerate.yaml").read_text())
    assert launch["num_processes"] == 2 and launch["use_cpu"] is True
    record = json.loads((out / "run.json").read_text())
    processes = record["processes"]
    assert [p["process"] for p in processes] == [0, 1]
    for p in processes:  # one VerifyBatch of the process's own 4 completions per step, nothing lost
        assert p["verifier_batches"] == 2 and p["verifier_batch_sizes"] == [4, 4]
        assert p["verifier_infra_errors"] == 0 and p["verifier_lost_batches"] == 0
    assert record["verifier_batches"] == 4 and record["verifier_infra_errors"] == 0
    steps = [h for h in record["log_history"] if "reward" in h]
    assert len(steps) == 2
    for h in steps:  # TRL averages log_metric values over the processes on the main one
        assert "rewards/verifier_format/mean" in h and h["verifier/infra_errors"] == 0.0
    assert proc.stderr.count("run record:") == 1  # only the main process writes and reports the record


@pytest.mark.docker
@pytest.mark.timeout(400)
def test_two_processes_score_none_when_the_service_goes_away(docker_ready, tmp_path):
    """The service stops after both processes' first batches: each process's later batches are lost, scored None
    (never 0), counted per process, and training goes on to its last step."""
    model, data, out = tiny_run(tmp_path)
    service = ServedProcess("--max-concurrency", "2", "--shutdown-grace-s", "5", log_path=tmp_path / "service.log")
    service.start()
    try:
        path = write_smoke_config(tmp_path / "run.yaml", model, data, out, service.address, num_processes=2,
                                  per_device_train_batch_size=4, max_steps=3, max_completion_length=12,
                                  reward_timeout_s=30)
        env = dict(os.environ, **OFFLINE_ENV, PYTHONPATH=str(ROOT))
        with open(tmp_path / "train.log", "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "trainer.cli", "train", "--config", str(path), "--launch"],
                                    stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        try:
            answered = re.compile(r"rpc Verify(Batch|Stream) OK")  # the reward functions stream each batch
            wait_for(lambda: len(answered.findall(service.log_path.read_text(errors="replace"))) >= 2
                     or proc.poll() is not None, timeout=240)
            service.stop()
            rc = proc.wait(300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    finally:
        service.stop()
    train_log = (tmp_path / "train.log").read_text(errors="replace")
    assert rc == 0, train_log[-4000:]
    record = json.loads((out / "run.json").read_text())
    for p in record["processes"]:
        assert p["verifier_batch_sizes"] == [4, 4, 4]
        assert 1 <= p["verifier_lost_batches"] <= 2  # the first batch was answered, the last was lost
        assert p["verifier_infra_errors"] == 4 * p["verifier_lost_batches"]
    steps = [h for h in record["log_history"] if "verifier/batch_lost" in h]
    assert len(steps) == 3
    assert steps[0]["verifier/batch_lost"] == 0.0 and steps[-1]["verifier/batch_lost"] == 1.0
    assert steps[-1]["verifier/infra_errors"] == 4.0  # the mean over the two processes of 4 lost samples each
