# Images of the deployment (compose.yaml):
#   target "verifier": the verifier service. It starts sandbox containers through
#     the host's Docker engine (mount /var/run/docker.sock), so sandboxes are
#     siblings, not nested. Built by scripts/service-image.sh from a wheelhouse made
#     on the host (./wheelhouse): the build needs no network (no apt, no package
#     index), so it works behind a TLS-intercepting proxy. SERVICE_BASE_IMAGE must
#     be Debian-based with python3; the default is the sandbox image setup.sh builds.
#   target "trainer": the GRPO trainer (TRL + vLLM) on a CUDA base image; also
#     runs `trl vllm-serve` for the multi-GPU layout (its build installs from PyPI).
ARG SERVICE_BASE_IMAGE=rlvr-sandbox-python:latest
ARG TRAINER_BASE_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04

FROM ${SERVICE_BASE_IMAGE} AS verifier
USER root
WORKDIR /app
COPY wheelhouse/ /tmp/wheelhouse/
RUN python3 -m venv --without-pip /opt/venv \
    && pip_wheel="$(ls /tmp/wheelhouse/pip-*.whl)" \
    && /opt/venv/bin/python3 "$pip_wheel/pip" install --no-index --find-links /tmp/wheelhouse --no-cache-dir \
        --no-warn-script-location rlvr-verifier \
    && rm -rf /tmp/wheelhouse
ENV PATH=/opt/venv/bin:$PATH
EXPOSE 50051
ENTRYPOINT ["verifier-service"]
CMD ["serve", "--host", "0.0.0.0", "--port", "50051"]

FROM ${TRAINER_BASE_IMAGE} AS trainer
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-venv python3-dev build-essential ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY verifier_service/ verifier_service/
COPY trainer/ trainer/
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir '.[trainer]' vllm accelerate
ENV PATH=/opt/venv/bin:$PATH HF_HUB_DISABLE_TELEMETRY=1
ENTRYPOINT []
CMD ["trainer", "--help"]
