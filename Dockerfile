# The swedeck service image: the CLI and Prefect flows, talking to the host's Docker engine
# (mount /var/run/docker.sock) for sandboxes. Build the base sandbox image on the host with
# `swedeck env base` first; nothing here pulls sandbox images.
FROM python:3.11-slim
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends git bubblewrap debootstrap docker.io \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/swedeck
COPY pyproject.toml README.md ./
COPY harness harness
COPY curation curation
COPY probes probes
COPY judge judge
COPY training training
COPY flows flows
COPY data data
RUN pip install --no-cache-dir .
ENV PREFECT_SERVER_ANALYTICS_ENABLED=false
ENTRYPOINT ["swedeck"]
CMD ["--help"]
