# shardgate: one image per service role, from one multi-stage build on Debian 12
# (docs/operations.md §6.1). Each final stage holds only what its service runs:
#
#   --target gateway   shardgate-gateway   the gateway (libpq, RocksDB, libcurl) - the default
#   --target health    shardgate-health    the health service
#   --target database  shardgate-database  PostgreSQL 15 and ops/pg.sh (compose `cluster`)
#   --target proxy     shardgate-proxy     HAProxy and its template (compose `cluster`)
#
# Every stage uses the same base, debian:12, which ops/image.sh makes locally from the Debian
# archive when no registry is reachable. Each service runs as a user of its own: the gateway as
# `shardgate` (SHARDGATE_UID), the health service as `shardgate-health` (SHARDGATE_HEALTH_UID),
# a member of the group `shardgate` (gid SHARDGATE_UID) so that it reads the journal (0640) on
# the state volume. The database image knows both users: it gives the owner role's password
# file to the first and the read-only role's to the second, so the health service cannot read
# the owner's secret (docs/operations.md §9.2).

ARG SHARDGATE_UID=990
ARG SHARDGATE_HEALTH_UID=991

FROM debian:12 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config libssl-dev libmicrohttpd-dev libjansson-dev libsystemd-dev libzstd-dev zlib1g-dev \
      libisal-dev libpq-dev librocksdb-dev libcurl4-openssl-dev \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
WORKDIR /src
COPY . .
# Only the two programs: tests, fuzzing and benchmarks are not part of any image, and
# SHARDGATE_TESTS=OFF keeps configure from needing the test-only tools (python3).
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSHARDGATE_WERROR=ON -DSHARDGATE_TESTS=OFF \
 && cmake --build build -j"$(nproc)" --target shardgate shardgate-health \
 && install -m 0755 build/gateway/shardgate build/health/shardgate-health /usr/local/bin/ \
 && /usr/local/bin/shardgate --version && /usr/local/bin/shardgate-health --version

# The health service: its program, the contract and membership it judges by, and the libraries
# it links (libpq for --store; no RocksDB, no libcurl, no python3).
FROM debian:12 AS health
ARG SHARDGATE_UID
ARG SHARDGATE_HEALTH_UID
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libssl3 libmicrohttpd12 libjansson4 libzstd1 zlib1g libpq5 \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && groupadd --system --gid "$SHARDGATE_UID" shardgate \
 && useradd --system --uid "$SHARDGATE_HEALTH_UID" --user-group --groups shardgate --no-create-home \
      --shell /usr/sbin/nologin shardgate-health \
 && mkdir -p /var/lib/shardgate /etc/shardgate
COPY --from=build /usr/local/bin/shardgate-health /usr/local/bin/
COPY conf/dispatch.env input/shards.json /etc/shardgate/
USER shardgate-health
EXPOSE 8081
CMD ["shardgate-health", "serve", "--listen", "0.0.0.0:8081", \
     "--conf", "/etc/shardgate/dispatch.env", "--shards", "/etc/shardgate/shards.json", \
     "--journal", "/var/lib/shardgate/journal.jsonl"]

# The cluster profile's PostgreSQL (ops/pg.sh run: roles, password files, then the server in
# the foreground as postgres). Debian's package would create a `main` cluster nobody uses, so
# that is switched off first; the data lives in /var/lib/shardgate-cluster (the postgres
# user's). It runs as root: pg.sh gives the owner's password file to `shardgate`, the
# read-only role's to `shardgate-health`, and runs PostgreSQL as postgres.
FROM debian:12 AS database
ARG SHARDGATE_UID
ARG SHARDGATE_HEALTH_UID
RUN mkdir -p /etc/postgresql-common \
 && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && useradd --system --uid "$SHARDGATE_UID" --user-group --no-create-home --shell /usr/sbin/nologin shardgate \
 && useradd --system --uid "$SHARDGATE_HEALTH_UID" --user-group --no-create-home \
      --shell /usr/sbin/nologin shardgate-health \
 && install -d -o postgres -g postgres /var/lib/shardgate-cluster
COPY ops/pg.sh /usr/local/share/shardgate/ops/
EXPOSE 5432
CMD ["/usr/local/share/shardgate/ops/pg.sh", "run", "/var/lib/shardgate-cluster/pg", "5432"]

# The cluster profile's HAProxy: Debian's package and the template of ops/cluster.sh, run as
# the package's haproxy user (the template has no user, group or chroot).
FROM debian:12 AS proxy
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
COPY ops/cluster/haproxy.cfg.in /usr/local/share/shardgate/ops/cluster/
USER haproxy
EXPOSE 8080

# The gateway, last so that a plain `docker build .` makes it: its program, the contract and
# membership, and the libraries it links: libpq5 (--store postgres), librocksdb7.8 (the
# idempotency index), libcurl4 (`shardgate admin`), libisal2 (the journal lines' CRC-32). No
# python3: the compose healthcheck asks
# /readyz with bash's /dev/tcp.
FROM debian:12 AS gateway
ARG SHARDGATE_UID
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libssl3 libmicrohttpd12 libjansson4 libsystemd0 libzstd1 zlib1g libisal2 libpq5 librocksdb7.8 \
      libcurl4 \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && useradd --system --uid "$SHARDGATE_UID" --user-group --no-create-home --shell /usr/sbin/nologin shardgate \
 && mkdir -p /var/lib/shardgate /etc/shardgate \
 && chown shardgate:shardgate /var/lib/shardgate
COPY --from=build /usr/local/bin/shardgate /usr/local/bin/
COPY conf/dispatch.env input/shards.json /etc/shardgate/
USER shardgate
# The state volume: journal.jsonl and the index, written by the gateway, read by health.
VOLUME /var/lib/shardgate
EXPOSE 8080
# The tokens are the operator's secrets, mounted at /run/secrets/ (docker-compose.yml): without
# them the gateway does not start (docs/decisions.md §48).
CMD ["shardgate", "serve", "--conf", "/etc/shardgate/dispatch.env", \
     "--shards", "/etc/shardgate/shards.json", "--state-dir", "/var/lib/shardgate", \
     "--token-file", "/run/secrets/gateway_token", \
     "--admin-token-file", "/run/secrets/gateway_admin_token", \
     "--listen", "0.0.0.0:8080"]
