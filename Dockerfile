# Multi-stage build: a static musl binary on an empty base, running as a non-root user, no shell.
# dev/image/build.sh builds the same image without a container engine; tests/image.rs holds the
# two to one cargo command, user, entrypoint, command, ports and labels.
FROM rust:1.95.0-bookworm AS build
RUN rustup target add x86_64-unknown-linux-musl && apt-get update && apt-get install -y --no-install-recommends musl-tools && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
# Cargo loads every workspace member and every declared target to read the manifest, even for
# `--bin kuota`: the quota core (a dependency), the dev cluster crate (a member and a
# dev-dependency, not built here) and the [[bench]] files must be present.
COPY crates crates
COPY dev/cluster/Cargo.toml dev/cluster/Cargo.toml
COPY dev/cluster/src dev/cluster/src
COPY benches benches
COPY src src
RUN cargo build --release --locked --bin kuota --target x86_64-unknown-linux-musl

FROM scratch
COPY --from=build /src/target/x86_64-unknown-linux-musl/release/kuota /kuota
LABEL org.opencontainers.image.title="kuota" \
      org.opencontainers.image.description="Kubernetes-native job queueing and quota admission, a drop-in for Kueue's API" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532
# Kueue's manager ports: webhook, metrics, visibility API, health probes.
EXPOSE 9443 8443 8082 8081
ENTRYPOINT ["/kuota"]
CMD ["serve"]
