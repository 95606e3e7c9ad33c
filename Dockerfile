# passk container action image.
#
# Base pinned by tag. For releases pin by digest as well
# (python:3.12-slim@sha256:...) so a rebuilt tag cannot change the image under
# users; no image registry is reachable where this file was written, so the
# digest could not be looked up and recorded here.
#
# Runner contract (docs "Dockerfile support for GitHub Actions"): no USER (the
# action runs as root so it can write to the mounted workspace and the
# file-command files) and no WORKDIR (the runner mounts GITHUB_WORKSPACE at
# /github/workspace and makes it the working directory).

# ---- build: turn the source tree into a wheel; nothing here reaches the final image
FROM python:3.12-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
COPY pyproject.toml README.m[d] /src/
COPY src/ /src/src/
RUN python -m pip wheel --no-deps --wheel-dir /dist /src

# ---- runtime: the wheel, its four runtime dependencies, and git
FROM python:3.12-slim
LABEL org.opencontainers.image.title="passk" \
      org.opencontainers.image.description="Reliability gate for LLM agents: pass^k, flip rate and accuracy, row by row" \
      org.opencontainers.image.licenses="MIT"
# PYTHONUNBUFFERED: progress lines reach the Actions log as they happen.
# PYTHONDONTWRITEBYTECODE: agents run from the mounted workspace; do not try to
# leave __pycache__ directories behind in the user's checkout.
# PASSK_AGENT_USER: passk runs as root here, so agents run as nobody, who cannot
# read passk's /proc/<pid>/environ (the token) or write to its stdout (workflow
# commands); see docs/threat-model.md.
# PASSK_BASELINE_USER: the base commit's agent runs as a user of its own, made
# below, so the pull request's agent (nobody) can neither write its HOME (a
# .pth file there runs in every later Python of that user) nor signal or
# trace its processes.
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PASSK_AGENT_USER=nobody \
    PASSK_BASELINE_USER=passk-baseline
# The baseline's user: unprivileged, no login, no home on disk (passk makes a
# private one per run), in no group but its own. Neither agent user is in any
# other group, so neither can open the runner's docker socket (root:docker 660).
RUN groupadd --system passk-baseline \
 && useradd --system --gid passk-baseline --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin passk-baseline \
 && test "$(id -G nobody)" = "$(id -g nobody)" \
 && test "$(id -G passk-baseline)" = "$(id -g passk-baseline)"
# git: the entrypoint reads the pull request's base commit and checks it out in
# a worktree. The workspace belongs to the runner's uid, not root, so git would
# refuse it as "dubious ownership" without the safe.directory entry.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git ca-certificates \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && git config --system --add safe.directory '*'
# An agent's setup (`pip install -r requirements.txt`) runs as nobody, so pip
# falls back to a user install in the agent's private HOME, which the agent,
# the same user with the same HOME, imports. The official image's python is
# not a venv and allows that as it is. A base whose python is a venv without
# the system site-packages (a distribution-built stand-in) turns user installs
# off, so there both pip's fallback and the import fail: include them.
RUN python -c "import pathlib, sys; cfg = pathlib.Path(sys.prefix, 'pyvenv.cfg'); off = 'include-system-site-packages = false'; sys.prefix == sys.base_prefix or cfg.write_text(cfg.read_text().replace(off, off.replace('false', 'true')))" \
 && python -c "import site; assert site.ENABLE_USER_SITE, 'user installs are off in this python'"
# Dependencies in their own layer, keyed on pyproject.toml alone: a change to
# src/ rebuilds only the small layer below, not the pip install of the four.
COPY pyproject.toml /tmp/pyproject.toml
RUN python -c "import tomllib; deps = tomllib.load(open('/tmp/pyproject.toml', 'rb'))['project']['dependencies']; open('/tmp/requirements.txt', 'w').write(chr(10).join(deps))" \
 && python -m pip install --no-cache-dir -r /tmp/requirements.txt \
 && rm /tmp/pyproject.toml /tmp/requirements.txt
COPY --from=build /dist/ /tmp/dist/
RUN python -m pip install --no-cache-dir --no-deps /tmp/dist/*.whl \
 && rm -rf /tmp/dist \
 && passk --version
ENTRYPOINT ["passk"]
CMD ["--help"]
