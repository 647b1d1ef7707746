#!/usr/bin/env bash
# Builds a container image for one static Go binary with buildah, without a daemon and without
# pulling anything: the image starts from scratch and holds only the binary, a CA bundle (the
# Packet API is HTTPS) and /etc/passwd and /etc/group naming the non-root user 65532 it runs as.
# Writes the image as an OCI archive whose reference is the image's name and tag.
#
#   hack/image/build.sh BINARY ENTRYPOINT REF VERSION ARCHIVE DESCRIPTION
#
# BINARY is a statically linked file, ENTRYPOINT its path in the image (/manager), REF the
# image's name:tag, VERSION what its label says (the binary reports the same, stamped in by the
# Makefile). BUILDAH_ROOT (default bin/buildah) keeps buildah's storage inside the checkout, so
# the machine's own containers storage is neither needed nor touched.
set -euo pipefail

binary=$1 entrypoint=$2 ref=$3 version=$4 archive=$5 description=$6
root=${BUILDAH_ROOT:-$(pwd)/bin/buildah}
ca_bundle=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
buildah=(buildah --root "$root/storage" --runroot "$root/run" --storage-driver vfs)

staging=$(mktemp -d)
container=""
cleanup() {
	rm -rf "$staging"
	if [ -n "$container" ]; then "${buildah[@]}" rm "$container" >/dev/null; fi
}
trap cleanup EXIT

mkdir -p "$staging/etc/ssl/certs" "$staging/tmp"
chmod 1777 "$staging/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$staging/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$staging/etc/group"
cp "$ca_bundle" "$staging/etc/ssl/certs/ca-certificates.crt"
chmod 0644 "$staging/etc/passwd" "$staging/etc/group" "$staging/etc/ssl/certs/ca-certificates.crt"
install -m 0755 "$binary" "$staging$entrypoint"

container=$("${buildah[@]}" from scratch)
"${buildah[@]}" copy --chown 0:0 "$container" "$staging/" / >/dev/null
"${buildah[@]}" config \
	--entrypoint "[\"$entrypoint\"]" --cmd '' --user 65532:65532 --workingdir / \
	--os linux --arch "$(go env GOARCH)" \
	--label org.opencontainers.image.title="$(basename "${ref%%:*}")" \
	--label org.opencontainers.image.description="$description" \
	--label org.opencontainers.image.source=https://github.com/kubernetes-sigs/cluster-api-provider-packet \
	--label org.opencontainers.image.licenses=Apache-2.0 \
	--label org.opencontainers.image.version="$version" \
	--label org.opencontainers.image.revision="$revision" \
	"$container"
# --timestamp 0: the same inputs give the same layer and config, whenever they are built.
"${buildah[@]}" commit --quiet --timestamp 0 --rm "$container" "$ref" >/dev/null
container=""
mkdir -p "$(dirname "$archive")"
rm -f "$archive"
"${buildah[@]}" push --quiet "$ref" "oci-archive:$archive:$ref"
"${buildah[@]}" rmi "$ref" >/dev/null
echo "$ref -> $archive ($(du -h "$archive" | cut -f1))"
