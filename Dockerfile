# The verifier service image. It starts sandbox containers through the host's
# Docker engine (mount /var/run/docker.sock), so sandboxes are siblings, not
# nested. BASE_IMAGE must be Debian-based; the default is the local base that
# sandboxes/build.sh makes without a registry.
ARG BASE_IMAGE=rlvr-base:bookworm
FROM ${BASE_IMAGE}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-venv ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY verifier_service/ verifier_service/
COPY trainer/ trainer/
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir .
ENV PATH=/opt/venv/bin:$PATH
EXPOSE 50051
ENTRYPOINT ["verifier-service"]
CMD ["serve", "--host", "0.0.0.0", "--port", "50051"]
