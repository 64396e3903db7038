"""A multi-node Ray cluster on this machine (Ray's ``cluster_utils.Cluster``), for tests, the benchmark and trying
the fleet out: a head that runs no replica (0 CPUs: the GCS and the Serve controller) and ``nodes`` worker nodes
with ``cpus_per_node`` logical CPUs each (logical: they may exceed the machine's cores), every process on
loopback, no dashboard, no usage reporting. ``close`` removes the app, Serve, and every node's processes.
"""

from __future__ import annotations

import os
import time

NODE_ARGS = {"object_store_memory": 80 * 1024 * 1024}
# Every Ray process of this cluster on 127.0.0.1 (Ray then takes the loopback address as each node's, as it does
# on a laptop), and no usage report: nothing leaves this machine. Set before Ray is imported.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}


def loopback_only() -> None:
    for key, value in LOOPBACK_ENV.items():
        os.environ[key] = value


# Serve's autoscaling metrics every second (10 s by default): a burst is seen within seconds (tests, benchmark)
FAST_METRICS_ENV = {"RAY_SERVE_HANDLE_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "1",
                    "RAY_SERVE_REPLICA_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "1"}


class LocalRayCluster:
    def __init__(self, nodes: int = 3, cpus_per_node: float = 2, head_cpus: float = 0, fast_metrics: bool = True):
        loopback_only()
        if fast_metrics:
            os.environ.update(FAST_METRICS_ENV)
        import ray
        from ray.cluster_utils import Cluster

        self.cluster = Cluster(initialize_head=True, head_node_args={
            **NODE_ARGS, "num_cpus": head_cpus, "include_dashboard": False})
        self.workers: list = []
        try:
            for _ in range(nodes):
                self.add_node(cpus_per_node, wait=False)
            self.cluster.wait_for_nodes()
            ray.init(address=self.cluster.address, log_to_driver=False)
            from ray import serve

            serve.start(proxy_location="Disabled")
        except BaseException:
            self.close()
            raise

    def add_node(self, cpus: float = 2, wait: bool = True):
        node = self.cluster.add_node(**NODE_ARGS, num_cpus=cpus, wait=wait)
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

    def __enter__(self) -> LocalRayCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
