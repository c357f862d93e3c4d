# shardgate: the gateway (shardgate) and the health service (shardgate-health) in one
# Debian 12 image. docker-compose.yml runs each as its own service over a shared state volume.
# Both stages use the same base, debian:12, which ops/image.sh makes locally from the Debian
# archive when no registry is reachable (docs/operations.md, Packaging and containers).

FROM debian:12 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config libssl-dev libmicrohttpd-dev libjansson-dev libsystemd-dev libzstd-dev zlib1g-dev \
      libpq-dev librocksdb-dev libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Only the two programs: tests, fuzzing and benchmarks are not part of the image, and
# SHARDGATE_TESTS=OFF keeps configure from needing the test-only tools (python3).
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSHARDGATE_WERROR=ON -DSHARDGATE_TESTS=OFF \
 && cmake --build build -j"$(nproc)" --target shardgate shardgate-health \
 && install -m 0755 build/gateway/shardgate build/health/shardgate-health /usr/local/bin/ \
 && /usr/local/bin/shardgate --version && /usr/local/bin/shardgate-health --version

FROM debian:12 AS runtime
# libpq5: the gateway's --store postgres; librocksdb7.8: its idempotency index; libcurl4:
# `shardgate admin`. postgresql-15 and haproxy: the compose `cluster`
# profile (docs/operations.md §9) runs its database and its proxy from this same image;
# Debian's package would create a `main` cluster nobody uses, so that is switched off first,
# and the cluster's database lives in /var/lib/shardgate-cluster (the postgres user's).
RUN mkdir -p /etc/postgresql-common \
 && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libssl3 libmicrohttpd12 libjansson4 libsystemd0 libzstd1 zlib1g libpq5 librocksdb7.8 libcurl4 python3 \
      postgresql-15 haproxy \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --no-create-home --shell /usr/sbin/nologin shardgate \
 && mkdir -p /var/lib/shardgate /etc/shardgate \
 && chown shardgate:shardgate /var/lib/shardgate \
 && install -d -o postgres -g postgres /var/lib/shardgate-cluster
COPY --from=build /usr/local/bin/shardgate /usr/local/bin/shardgate-health /usr/local/bin/
# The contract and membership the services read; mount other files over them to change
# the membership. The full conf/ and input/ (and the outside tools) stay in the image for
# reference and for running client/probe.py against a receipt inside the container.
COPY conf/dispatch.env input/shards.json /etc/shardgate/
COPY conf/ /usr/local/share/shardgate/conf/
COPY input/ /usr/local/share/shardgate/input/
COPY client/ /usr/local/share/shardgate/client/
# The cluster profile's PostgreSQL (ops/pg.sh run) and HAProxy template.
COPY ops/pg.sh /usr/local/share/shardgate/ops/
COPY ops/cluster/haproxy.cfg.in /usr/local/share/shardgate/ops/cluster/
USER shardgate
# The state volume: journal.jsonl, written by the gateway, read by the health service.
VOLUME /var/lib/shardgate
EXPOSE 8080 8081
CMD ["shardgate", "serve", "--conf", "/etc/shardgate/dispatch.env", \
     "--shards", "/etc/shardgate/shards.json", "--state-dir", "/var/lib/shardgate", \
     "--listen", "0.0.0.0:8080"]
