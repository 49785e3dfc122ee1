#!/usr/bin/env bash
# Builds the Redis image the Docker backend uses by default, offline from a
# registry's point of view: a minimal Debian root made with debootstrap from
# the Debian mirror, with Debian's redis-server and redis-sentinel and what
# every fault needs inside a container: libfaketime plus the malloc shim
# (clock faults), iptables and iproute2 (partitions from inside), procps.
# No registry is involved, so it works where nothing can be pulled.
#
#   scripts/image.sh [NAME]        default NAME: lockharness/redis:bookworm
#
# Environment: SUITE (bookworm), MIRROR (http://deb.debian.org/debian),
# FORCE=1 rebuilds an image that exists, SHIM_SRC is the malloc shim's
# source (sut/local/shim/glibcmalloc.c of the checkout). Needs root,
# debootstrap and gcc. `harness image build` runs this same script.
set -euo pipefail
cd "$(dirname "$0")/.."
SHIM_SRC=${SHIM_SRC:-$PWD/sut/local/shim/glibcmalloc.c}

NAME=${1:-lockharness/redis:bookworm}
SUITE=${SUITE:-bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SHIM_DIR=/usr/local/lib/lockharness
PKGS="redis-server redis-sentinel libfaketime iproute2 iptables procps"

if ! command -v docker >/dev/null 2>&1; then
  echo "image: docker is not installed; on Debian: apt-get install -y docker.io" >&2
  exit 1
fi
if [ "${FORCE:-}" != 1 ] && docker image inspect "$NAME" >/dev/null 2>&1; then
  echo "image: $NAME exists (FORCE=1 rebuilds it)"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "image: debootstrap needs root: run this as root (or with sudo)" >&2
  exit 1
fi
need=()
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
if [ ${#need[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "image: needs ${need[*]}; install them with your package manager" >&2
    exit 1
  fi
  echo "image: installing ${need[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

start=$(date +%s)
root=$(mktemp -d /tmp/lockharness-image-XXXXXX)
cleanup() {
  # debootstrap may leave proc and sys mounted in the root after a failure.
  for m in proc sys dev/pts dev; do umount -l "$root/$m" 2>/dev/null || true; done
  rm -rf "$root"
}
trap cleanup EXIT

echo "image: debootstrap $SUITE from $MIRROR" >&2
debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$root.log" 2>&1 || {
  tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"

# Packages must not start services inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $PKGS >/dev/null
umount "$root/proc"
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/* \
  "$root"/usr/share/locale/* "$root"/var/cache/debconf/*-old "$root"/var/log/* "$root/usr/sbin/policy-rc.d"

# The malloc shim, built on this host (same Debian release as the image by
# default) from the source the local backend embeds.
mkdir -p "$root$SHIM_DIR"
gcc -shared -fPIC -O2 -o "$root$SHIM_DIR/glibcmalloc.so" "$SHIM_SRC" -ldl

tar -C "$root" -c . | docker import \
  -c 'CMD ["redis-server", "--protected-mode", "no"]' \
  -c 'EXPOSE 6379' \
  -c "LABEL org.lockharness.image=redis org.lockharness.shim=$SHIM_DIR/glibcmalloc.so" \
  - "$NAME" >/dev/null

size=$(docker image inspect -f '{{.Size}}' "$NAME")
echo "image: built $NAME in $(( $(date +%s) - start )) s, $(( size / 1000000 )) MB"
