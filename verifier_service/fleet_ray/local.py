"""A multi-node Ray cluster on this machine (Ray's ``cluster_utils.Cluster``), for tests, the benchmark and trying
the fleet out: a head that runs no replica (0 CPUs: the GCS and the Serve controller) and ``nodes`` worker nodes
with ``cpus_per_node`` logical CPUs each (logical: they may exceed the machine's cores), every process on
loopback, no dashboard, no usage reporting. ``close`` removes the app, Serve, and every node's processes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

NODE_ARGS = {"object_store_memory": 80 * 1024 * 1024}
# Every Ray process of this cluster on 127.0.0.1 (Ray then takes the loopback address as each node's, as it does
# on a laptop), and no usage report: nothing leaves this machine. Set before Ray is imported.
# A starved host (CI, shared machines) may take long to start a node's Python agents: the raylet waits 2 min for
# them, not 30 s.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
                "RAY_agent_register_timeout_ms": "120000"}


def loopback_only() -> None:
    for key, value in LOOPBACK_ENV.items():
        os.environ[key] = value


# Serve's autoscaling metrics every second (10 s by default): a burst is seen within seconds (tests, benchmark)
FAST_METRICS_ENV = {"RAY_SERVE_HANDLE_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "1",
                    "RAY_SERVE_REPLICA_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "1"}


class LocalRayCluster:
    def __init__(self, nodes: int = 3, cpus_per_node: float = 2, head_cpus: float = 0, fast_metrics: bool = True,
                 attempts: int = 3):
        loopback_only()
        if fast_metrics:
            os.environ.update(FAST_METRICS_ENV)
        for attempt in range(1, attempts + 1):
            try:
                self._start(nodes, cpus_per_node, head_cpus)
                return
            except Exception as exc:
                # Ray gives a raylet 30 s to register with the GCS, fixed: on a starved host that can pass
                if "timed out during startup" not in str(exc) or attempt == attempts:
                    raise
                print(f"a Ray node did not register in time (attempt {attempt} of {attempts}): starting again",
                      flush=True)

    def _start(self, nodes: int, cpus_per_node: float, head_cpus: float) -> None:
        import ray
        from ray.cluster_utils import Cluster

        self.cluster = None
        self.workers: list = []
        # every process of this cluster names this directory (its session, sockets, logs): what is ours to kill
        self.temp_dir = tempfile.mkdtemp(prefix="rlvr-ray-", dir="/tmp")
        # Ray writes the head's address to /tmp/ray/ray_current_cluster whatever temp_dir says, and fails when that
        # directory is not there (a machine where no Ray ran before, or whose /tmp was cleaned)
        os.makedirs("/tmp/ray", exist_ok=True)
        try:
            self.cluster = Cluster(initialize_head=True, head_node_args={
                **NODE_ARGS, "temp_dir": self.temp_dir, "num_cpus": head_cpus, "include_dashboard": False})
            for _ in range(nodes):
                self.add_node(cpus_per_node, wait=False)
            self.cluster.wait_for_nodes()
            ray.init(address=self.cluster.address, log_to_driver=False)
            from ray import serve

            serve.start(proxy_location="Disabled")
        except BaseException:
            if self.cluster is not None:
                self.close()
            _kill_processes_of(self.temp_dir)
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            raise

    def add_node(self, cpus: float = 2, wait: bool = True):
        node = self.cluster.add_node(**NODE_ARGS, temp_dir=self.temp_dir, num_cpus=cpus, wait=wait)
        self.workers.append(node)
        return node

    def node_of(self, node_id: str):
        """The worker node (``cluster_utils`` node) with Ray node id ``node_id``."""
        for node in self.workers:
            if node.node_id == node_id:
                return node
        raise KeyError(node_id)

    def kill_node(self, node_id: str) -> None:
        """A worker node lost at once, as in a power cut: every process under its raylet (its workers, the
        replicas among them, their sandboxes) SIGKILLed, then the node's own processes. (Removing the node alone
        kills its raylet, and a worker can go on answering calls it holds until it notices.)"""
        import psutil
        from ray._private import ray_constants

        node = self.node_of(node_id)
        doomed = []
        for info in node.all_processes.get(ray_constants.PROCESS_TYPE_RAYLET, []):
            try:
                doomed += psutil.Process(info.process.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                pass
        for process in doomed:
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        self.cluster.remove_node(node, allow_graceful=False)
        self.workers.remove(node)

    def close(self) -> None:
        import ray

        try:
            if ray.is_initialized():
                from ray import serve

                try:
                    serve.shutdown()
                except Exception:  # noqa: BLE001 - the cluster goes next, whatever Serve says
                    pass
                ray.shutdown()
        finally:
            self.cluster.shutdown()
            deadline = time.monotonic() + 30
            while self.cluster.remaining_processes_alive() and time.monotonic() < deadline:
                time.sleep(0.2)
            _kill_processes_of(self.temp_dir)  # a worker still exiting, a node that failed to start
            shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> LocalRayCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _kill_processes_of(temp_dir: str) -> None:
    """SIGKILLs every process whose command line names this cluster's ``temp_dir`` (a node that failed to start
    leaves its raylet and agents running, unknown to ``Cluster``)."""
    import psutil

    doomed = [p for p in psutil.process_iter(["cmdline"]) if temp_dir in " ".join(p.info.get("cmdline") or ())]
    for process in doomed:
        try:
            process.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(doomed, timeout=10)  # gone before their directory is removed (they write logs into it)
