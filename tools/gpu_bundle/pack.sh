#!/usr/bin/env bash
# Packs what a GPU machine without this project's Debian packages needs to run the GPU checks, as one .tar.xz
# (build/gpu_bundle.tar.xz, about 45 MB): the GPU test binaries, the ramjet host with the plugins the GPU bench uses
# (stripped), the Debian libraries they link (oneDNN, gomp, boost_program_options, protobuf-lite, png, jpeg, zip...),
# Fashion-MNIST and the fortunes corpus. The machine brings the NVIDIA driver, cuBLASLt 13, cuDNN 9, NCCL 2 and,
# for the bench's peer rows, PyTorch; tools/gpu_bundle/run.sh runs it there. Run after ./dev build.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/bin/ramjet_cuda_tests ] || { echo "pack.sh: build/bin/ramjet_cuda_tests is missing (./dev build with nvcc)" >&2; exit 1; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
b=$work/bundle; mkdir -p $b/bin $b/lib/ramjet/plugins $b/syslib $b/data
for t in ramjet ramjet_cuda_tests ramjet_conformance_tests; do strip -o $b/bin/$t build/bin/$t; done
for p in onednn cuda nccl stock_images stock_records stock_sources stock_text stock_transforms tflite; do
  strip -o $b/lib/ramjet/plugins/libramjet_$p.so build/lib/ramjet/plugins/libramjet_$p.so
  cp build/lib/ramjet/plugins/$p.json $b/lib/ramjet/plugins/
done
# What they link from the system, less glibc, libstdc++ and zlib (every Linux has them) and the CUDA libraries.
for f in $b/bin/* $b/lib/ramjet/plugins/*.so; do ldd "$f" | awk '/=> \/lib/ {print $3}'; done | sort -u |
  grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libz)\.so' |
  while read -r l; do cp -L "$l" $b/syslib/; done
cp /usr/share/datasets/fashion-mnist/*.gz $b/data/
mkdir -p $b/data/fortunes && cp /usr/share/games/fortunes/*.u8 $b/data/fortunes/  # the char transformer's corpus
XZ_OPT="-T2 -4" tar -C "$work" -cJf build/gpu_bundle.tar.xz bundle
ls -la build/gpu_bundle.tar.xz
