# Locust master and workers. Build context: the repository root (see .dockerignore).
FROM python:3.11-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/venv
COPY compose/requirements.txt /tmp/requirements.txt
RUN /opt/venv/bin/pip install -r /tmp/requirements.txt

FROM python:3.11-slim-bookworm
COPY --from=build /opt/venv /opt/venv
# The swarmbench package's core + plugin (.dockerignore leaves the runner and the analysis out:
# the image needs neither pandas nor Docker), importable from /swarmbench.
ENV PATH=/opt/venv/bin:$PATH PYTHONPATH=/swarmbench PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# uid 1000: files the master writes to a bind-mounted results/ belong to the usual first user
# of a Linux desktop; compose can override it (SWARMBENCH_UID) to match yours.
RUN useradd --uid 1000 --create-home --shell /usr/sbin/nologin locust
WORKDIR /swarmbench
COPY locust.conf ./
COPY swarmbench ./swarmbench
COPY locustfiles ./locustfiles
USER 1000:1000
EXPOSE 8089 5557
# `master [--headless]` or `worker`: the Locust command line is built by swarmbench.core.launch,
# the same code that starts local processes; any other arguments go to `locust` unchanged.
ENTRYPOINT ["python", "-m", "swarmbench", "launch"]
