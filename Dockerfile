# The clcg-pipeline image: one image for Dagster's code server, the daemon, the webserver and
# the run workers (K8sRunLauncher / DockerRunLauncher start it with their own command).
#
#   docker build -t clcg-pipeline .
#   docker run -p 4000:4000 clcg-pipeline                       # code server (default command)
#   docker run clcg-pipeline dagster-daemon run                 # the daemon
#   docker run -p 3000:3000 clcg-pipeline dagster-webserver -h 0.0.0.0 -p 3000 -w /opt/dagster/workspace.yaml
#
# Mount a dagster.yaml with Postgres storage over $DAGSTER_HOME/dagster.yaml and point
# CLCG_DATA_DIR at object storage (s3://bucket/clcg, with the AWS_* variables) for a deployment;
# the defaults below run on the container's own disk.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md requirements.lock ./
COPY clcg_pipeline ./clcg_pipeline
COPY sql ./sql
COPY assets_config ./assets_config
COPY dagster.yaml dagster.postgres.yaml ./
# setup.py copies sql/, assets_config/ and dagster.yaml into the wheel (package data).
RUN pip wheel --no-deps -w /dist .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    DAGSTER_HOME=/opt/dagster/dagster_home \
    CLCG_DATA_DIR=/opt/dagster/clcg_data
COPY --from=build /dist /dist
COPY requirements.lock /tmp/requirements.lock
# The lock constrains every dependency to the versions the tests ran with; the s3 extra lets
# the data folder live on S3 or an S3-compatible store, the postgres extra holds the instance in
# PostgreSQL (dagster.postgres.yaml, docs/DEPLOY.md).
RUN pip install --constraint /tmp/requirements.lock "$(ls /dist/clcg_pipeline-*.whl)[s3,postgres]" \
    && rm -rf /dist /tmp/requirements.lock
# The instance settings shipped in the wheel, unless a deployment mounts its own.
RUN mkdir -p "$DAGSTER_HOME" "$CLCG_DATA_DIR" \
    && python -c "import os, shutil; from clcg_pipeline._project_files import project_path; \
shutil.copyfile(project_path('dagster.yaml'), os.path.join(os.environ['DAGSTER_HOME'], 'dagster.yaml'))" \
    && printf 'load_from:\n  - grpc_server:\n      host: localhost\n      port: 4000\n      location_name: clcg_pipeline\n' \
       > /opt/dagster/workspace.yaml
WORKDIR /opt/dagster
EXPOSE 4000
CMD ["dagster", "code-server", "start", "-h", "0.0.0.0", "-p", "4000", "-m", "clcg_pipeline.definitions"]
