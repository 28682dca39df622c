# Multi-stage build: a static binary on an empty base, running as a non-root user, no shell.
FROM rust:1.95-bookworm AS build
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
USER 65532:65532
ENTRYPOINT ["/kuota"]
CMD ["serve"]
