# The swedeck service image: the CLI, the Prefect flows and a Ray node, on the base that
# `swedeck env base` builds (Debian bookworm with Python 3.11, pip and git; nothing is pulled from a
# registry). `swedeck env image` builds it and hands pip this machine's index settings and CA bundle
# (build arguments; the bundle in the context, kept in the build stage). By hand:
#   docker build --build-arg BASE=swedeck-base:latest [--build-arg PIP_INDEX_URL=...] -t swedeck .
# Sandboxes run on the host's Docker engine: mount /var/run/docker.sock, and the cache folder at the
# same path on both sides (sandboxes bind folders of it), then `swedeck curate --backend docker`.
ARG BASE=swedeck-base:latest

FROM ${BASE} AS build
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_TRUSTED_HOST
ARG PIP_CERT
COPY . /opt/swedeck/src
RUN python3 -m venv /opt/swedeck/venv \
 && /opt/swedeck/venv/bin/pip install --no-cache-dir --disable-pip-version-check \
      "/opt/swedeck/src[service]"

# the sources and the CA bundle stay in the build stage: only the installed environment is copied out
FROM ${BASE}
COPY --from=build /opt/swedeck/venv /opt/swedeck/venv
ENV PATH=/opt/swedeck/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PREFECT_SERVER_ANALYTICS_ENABLED=false \
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=120
WORKDIR /work
ENTRYPOINT ["swedeck"]
CMD ["--help"]
