#!/bin/sh
# Builds and runs NPB 3.4's MPI CG (Fortran), the peer of `examples/nas_cg_mpi`.
#
#   scripts/peers/npb-cg-mpi.sh NPB_MPI_DIR CLASS NPROCS [MPIRUN_ARGS...]
#
# NPB_MPI_DIR is the NPB3.4-MPI folder of an NPB 3.4 checkout; it is copied
# to NPB_BUILD_DIR (default target/peers/NPB3.4-MPI) and built there, so the
# checkout stays untouched. Unless the copy has a config/make.def already,
# one is written for Debian's OpenMPI (mpif90,
# -O3 -march=native; gfortran >= 10 needs -fallow-argument-mismatch for
# NPB's untyped MPI buffers and -fallow-invalid-boz for its X'..' constants). `make CG CLASS=...` builds bin/cg.CLASS.x;
# NPROCS must be a power of two (NPB's rule). Each rank is bound to a core
# (--bind-to core); as root, mpirun gets --allow-run-as-root. Prints NPB's
# report and, last, one JSON line with Mop/s, seconds and verification.
set -eu
dir=${1:?usage: npb-cg-mpi.sh NPB_MPI_DIR CLASS NPROCS [MPIRUN_ARGS...]}
class=${2:?class S, W, A, B or C}
np=${3:?number of MPI ranks}
shift 3
[ -f "$dir/CG/cg.f" ] || { echo "npb-cg-mpi.sh: $dir/CG/cg.f not found" >&2; exit 2; }
# OpenMPI's mpif90 wraps gfortran, which libopenmpi-dev does not pull in.
for tool in mpif90 mpirun gfortran; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "npb-cg-mpi.sh: $tool not found (Debian: apt-get install openmpi-bin libopenmpi-dev gfortran)" >&2
        exit 2
    }
done
build=${NPB_BUILD_DIR:-target/peers/NPB3.4-MPI}
if [ ! -f "$build/CG/cg.f" ]; then
    mkdir -p "$build"
    cp -R "$dir/." "$build/"
    rm -f "$build"/bin/*.x
fi
dir=$build
if [ ! -f "$dir/config/make.def" ]; then
    cat > "$dir/config/make.def" <<'DEF'
MPIFC = mpif90
FLINK = $(MPIFC)
FMPI_LIB =
FMPI_INC =
FFLAGS = -O3 -march=native -mcmodel=medium -fallow-argument-mismatch -fallow-invalid-boz
FLINKFLAGS = $(FFLAGS)
MPICC = mpicc
CLINK = $(MPICC)
CMPI_LIB =
CMPI_INC =
CFLAGS = -O3 -march=native
CLINKFLAGS = $(CFLAGS)
CC = gcc -g
BINDIR = ../bin
CONVERTFLAG = -DFORTRAN_REC_SIZE=1
RAND = randi8
DEF
fi
bin="$dir/bin/cg.$class.x"
if [ ! -x "$bin" ]; then
    mkdir -p "$dir/bin"
    (cd "$dir" && make CG CLASS="$class" >/dev/null 2>&1) || { echo "npb-cg-mpi.sh: make CG CLASS=$class failed in $dir" >&2; exit 1; }
fi
root=""
[ "$(id -u)" -ne 0 ] || root="--allow-run-as-root"
# shellcheck disable=SC2086
out=$(mpirun $root -np "$np" --bind-to core "$@" "$bin")
echo "$out"
echo "$out" | awk -v np="$np" -v c="$class" '
    /Mop\/s total/ { mops = $NF }
    /Time in seconds/ { secs = $NF }
    /VERIFICATION SUCCESSFUL/ { ok = "true" }
    /VERIFICATION FAILED|UNSUCCESSFUL/ { ok = "false" }
    END { if (ok == "") ok = "false"; printf "{\"peer\":\"npb-3.4-mpi-cg\",\"class\":\"%s\",\"ranks\":%d,\"seconds\":%s,\"mops\":%s,\"verified\":%s}\n", c, np, secs, mops, ok }'
