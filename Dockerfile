# syntax=docker/dockerfile:1
# The manager image: a static Go binary (CGO off) on distroless, running as the non-root user.
# `make docker-build` builds it; `--target packetsim` builds the Packet API simulator image the
# Tilt development loop runs next to the manager (docs/tilt.md).

ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS builder
WORKDIR /workspace
# Download modules first so that source changes do not invalidate this layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH
# The build cache lives at a path of its own (GOCACHE), kept between builds by the cache mount.
ENV GOCACHE=/cache/go-build
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath \
      -ldflags "-s -w -X sigs.k8s.io/cluster-api-provider-packet/pkg/version.version=${VERSION}" \
      -o /out/manager . && \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags "-s -w" \
      -o /out/packetsim ./test/infrastructure/packetsim/cmd

FROM gcr.io/distroless/static:nonroot AS packetsim
COPY --from=builder /out/packetsim /packetsim
USER 65532:65532
ENTRYPOINT ["/packetsim"]

FROM gcr.io/distroless/static:nonroot
LABEL org.opencontainers.image.source="https://github.com/kubernetes-sigs/cluster-api-provider-packet" \
      org.opencontainers.image.description="Cluster API infrastructure provider for Packet (Equinix Metal)"
WORKDIR /
COPY --from=builder /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
