# The etctl operator image: `etctl run`, as manifests/manager/deployment.yaml runs it.
#
#   docker build -t ghcr.io/etctl/etctl:0.1.0 .
#
# It runs as the numeric user 65532 (the Deployment's runAsUser, runAsGroup and fsGroup), needs no
# shell (exec-form entrypoint, no RUN in the final stage) and writes nothing outside /tmp, which
# the Deployment mounts as an emptyDir under a read-only root filesystem: bytecode is compiled at
# build time and HOME points at /tmp. tests/test_image.py keeps this file, the Deployment and the
# package version consistent.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY etctl ./etctl
RUN ["python", "-m", "venv", "/opt/etctl"]
RUN ["/opt/etctl/bin/pip", "install", "--compile", "/src"]

FROM ${PYTHON_IMAGE}
ARG ETCTL_VERSION=0.1.0
LABEL org.opencontainers.image.title="etctl" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${ETCTL_VERSION}"
COPY --from=build /opt/etctl /opt/etctl
ENV PATH=/opt/etctl/bin:/usr/local/bin:/usr/bin:/bin \
    HOME=/tmp \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
WORKDIR /tmp
EXPOSE 8080 8081
ENTRYPOINT ["etctl"]
CMD ["run"]
