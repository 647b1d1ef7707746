# syntax=docker/dockerfile:1
# The manager image for machines with a Docker engine (`make docker-build`). It holds what
# `make image` (hack/image/build.sh, buildah, no daemon) puts in it: the static binary, a CA
# bundle and /etc/passwd and /etc/group naming the non-root user 65532, on scratch.
# `--target packetsim` builds the Packet API simulator image for Cluster API's Tilt loop.

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
      -o /out/packetsim ./test/infrastructure/packetsim/cmd/packetsim
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp && chmod 1777 /rootfs/tmp && \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /rootfs/etc/passwd && \
    printf 'root:x:0:\nnonroot:x:65532:\n' > /rootfs/etc/group && \
    cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/

FROM scratch AS packetsim
COPY --from=builder /rootfs/ /
COPY --from=builder /out/packetsim /packetsim
USER 65532:65532
ENTRYPOINT ["/packetsim"]

FROM scratch
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="cluster-api-provider-packet" \
      org.opencontainers.image.description="Cluster API infrastructure provider for Packet (Equinix Metal)" \
      org.opencontainers.image.source="https://github.com/kubernetes-sigs/cluster-api-provider-packet" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=builder /rootfs/ /
COPY --from=builder /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
