#!/usr/bin/env bash
# Builds the image the Docker command backend runs in (default tag `iris-command:local`).
#
#   build-image.sh            docker build from ./Dockerfile (FROM python:3.12-slim; needs a registry)
#   build-image.sh --offline  a Debian bookworm rootfs with python3-minimal made by debootstrap,
#                             imported with `docker import` (needs only a Debian package mirror)
#   build-image.sh --force    rebuild even when the tag already exists
#   IRIS_COMMAND_IMAGE=tag    build under another tag
#   DEBIAN_MIRROR=url         the mirror debootstrap uses (default: deb.debian.org)
#
# The image is cached by tag: when it already exists nothing is built, so CI can call this
# on every run. It needs a running Docker engine (`docker info` must work) and, for
# --offline, root and the `debootstrap` package.
set -euo pipefail

tag="${IRIS_COMMAND_IMAGE:-iris-command:local}"
offline=0
force=0
for arg in "$@"; do
    case "$arg" in
        --offline) offline=1 ;;
        --force) force=1 ;;
        *) echo "usage: $0 [--offline] [--force]" >&2; exit 2 ;;
    esac
done

if ! docker info >/dev/null 2>&1; then
    echo "error: no Docker engine answers; start one with: dockerd > /tmp/dockerd.log 2>&1 &" >&2
    exit 1
fi

if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
    echo "image $tag already exists; nothing to build (use --force to rebuild)"
    exit 0
fi

here="$(cd "$(dirname "$0")" && pwd)"

if [ "$offline" = 0 ]; then
    docker build -t "$tag" "$here"
    exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
    echo "error: debootstrap is missing; install it with: apt-get install -y debootstrap" >&2
    exit 1
fi

mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
work="$(mktemp -d /tmp/iris-command-rootfs.XXXXXX)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"

# minbase keeps the Essential set (dash, coreutils, util-linux for setsid, grep, ...);
# python3-minimal adds the interpreter run_python needs.
debootstrap --variant=minbase --include=python3-minimal bookworm "$rootfs" "$mirror"

# Trim what a command sandbox never uses, to keep the image small.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*

tar -C "$rootfs" --numeric-owner -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'LABEL io.iris.command.image=offline' \
    --change 'CMD ["/bin/sh"]' \
    - "$tag"
echo "built $tag (offline rootfs)"
