#!/bin/sh
# Installs, from Debian's packages, what building and testing skelaff needs,
# when it is missing. Sourced by scripts/main.sh and scripts/test.sh.
set -eu

need=""
# openmpi-bin, libopenmpi-dev and libclang-dev (bindgen) build and run the
# `mpi` feature's tests under mpirun; valgrind counts the STM's costs
# (crates/costs).
for pkg in libhwloc-dev libudev-dev pkg-config qemu-system-x86 busybox-static cpio binutils \
    openmpi-bin libopenmpi-dev libclang-dev valgrind; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need="$need $pkg"
done
# The emulated NUMA machine boots a Debian 6.1 kernel fetched by `apt-get download`.
kernel_listed=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' 2>/dev/null | head -n 1)

if [ -n "$need" ] || [ -z "$kernel_listed" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: missing Debian packages:$need; run this as root or: sudo apt-get install$need" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    if [ -n "$need" ]; then
        echo "setup: installing$need"
        # shellcheck disable=SC2086
        apt-get install -y -qq --no-install-recommends $need >/dev/null
    fi
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: cargo not found; install Rust (https://rustup.rs)" >&2; exit 1; }
