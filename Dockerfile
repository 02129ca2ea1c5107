# The etctl operator image: `etctl run`, as manifests/base/manager/deployment.yaml runs it.
#
#   docker build -t ghcr.io/etctl/etctl:0.1.0 .
#
# Reproducible inputs: the base image is pinned by digest (the multi-platform index of the tag,
# so the same digest builds amd64 and arm64), and every Python dependency comes from
# requirements.lock, installed with --require-hashes before the source is copied; etctl itself
# is then installed with --no-deps, so nothing unpinned reaches the image. To move either on
# (docs/operations.md, "The operator image"):
#
#   docker buildx imagetools inspect python:3.11-slim-bookworm     # the new index digest
#   uv pip compile pyproject.toml --generate-hashes --universal --python-version 3.11 \
#       -o requirements.lock --upgrade                              # the new lock
#
# It runs as the numeric user 65532 (the Deployment's runAsUser, runAsGroup and fsGroup), needs no
# shell (exec-form entrypoint, no RUN in the final stage) and writes nothing outside /tmp, which
# the Deployment mounts as an emptyDir under a read-only root filesystem: bytecode is compiled at
# build time and HOME points at /tmp. tests/test_image.py keeps this file, the Deployment and the
# package version consistent.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN ["python", "-m", "venv", "/opt/etctl"]
COPY requirements.lock ./
RUN ["/opt/etctl/bin/pip", "install", "--compile", "--require-hashes", "--only-binary=:all:", "-r", "requirements.lock"]
COPY pyproject.toml README.md ./
COPY etctl ./etctl
RUN ["/opt/etctl/bin/pip", "install", "--compile", "--no-deps", "/src"]

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
EXPOSE 8443 8081 9443
ENTRYPOINT ["etctl"]
CMD ["run"]
