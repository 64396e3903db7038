"""deploy/: every Kubernetes manifest is valid against the Kubernetes API's JSON schemas (strict: no unknown
field), offline (kubernetes-validate carries the schemas); the autoscalers scale the Deployment that exists, on
the gauge the service exports; the Ray Serve config builds the fleet's application."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
KUBERNETES = "1.33"  # the schema version checked against (a release still supported upstream)
CRDS = {("keda.sh/v1alpha1", "ScaledObject")}  # custom resources: checked below, field by field


def documents() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(K8S.glob("*.yaml")):
        out += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return out


def by_kind(kind: str) -> list[dict]:
    return [doc for _, doc in documents() if doc["kind"] == kind]


def test_every_manifest_is_valid_against_the_kubernetes_schemas():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    checked = 0
    for name, doc in documents():
        if (doc["apiVersion"], doc["kind"]) in CRDS:
            continue
        try:
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"deploy/k8s/{name} ({doc['kind']}): {exc.message} at {list(exc.path)}")
        checked += 1
    assert checked >= 7, f"only {checked} manifests checked"
    broken = {**by_kind("HorizontalPodAutoscaler")[0], "spec": {"minReplicas": "two"}}
    with pytest.raises(kubernetes_validate.ValidationError):  # the check can fail
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


def _pending_gauge_exported() -> str:
    from verifier_service.service.app import App

    return inspect.getsource(App._live_metrics)


def test_the_autoscalers_scale_the_deployment_on_the_pending_gauge():
    deployment = by_kind("Deployment")[0]
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment["metadata"]["name"]}
    exported = _pending_gauge_exported()
    hpa = by_kind("HorizontalPodAutoscaler")[0]
    assert hpa["spec"]["scaleTargetRef"] == target
    assert hpa["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    metric = hpa["spec"]["metrics"][0]["pods"]["metric"]["name"]
    assert f'"{metric}"' in exported
    assert hpa["spec"]["minReplicas"] >= 2

    (scaled,) = by_kind("ScaledObject")
    spec = scaled["spec"]
    assert set(spec) <= {"scaleTargetRef", "minReplicaCount", "maxReplicaCount", "pollingInterval",
                         "cooldownPeriod", "advanced", "triggers", "idleReplicaCount", "fallback"}
    assert spec["scaleTargetRef"] == target
    assert scaled["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "prometheus"
    assert set(trigger["metadata"]) >= {"serverAddress", "query", "threshold"}
    assert all(isinstance(v, str) for v in trigger["metadata"].values())  # KEDA's metadata is a map of strings
    float(trigger["metadata"]["threshold"])
    assert "rlvr_pending_completions" in trigger["metadata"]["query"]
    assert '"rlvr_pending_completions"' in exported
    behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]  # an HPA's behavior: its schema
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    as_hpa = {**hpa, "spec": {**hpa["spec"], "behavior": behavior}}
    kubernetes_validate.validate(as_hpa, KUBERNETES, strict=True)


def test_the_ray_serve_config_builds_the_fleet():
    pytest.importorskip("ray.serve")
    from ray.serve.schema import ServeDeploySchema

    from verifier_service.fleet_ray import deployment

    config = yaml.safe_load((ROOT / "deploy" / "ray" / "serve.yaml").read_text())
    schema = ServeDeploySchema.model_validate(config) if hasattr(ServeDeploySchema, "model_validate") \
        else ServeDeploySchema.parse_obj(config)
    (app,) = schema.applications
    module, _, name = app.import_path.partition(":")
    assert module == deployment.__name__ and name == "build"
    built = deployment.build(app.args)
    assert built is not None
    with pytest.raises(ValueError, match="unknown fleet settings"):
        deployment.build({**app.args, "replica": 3})
