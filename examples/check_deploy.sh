#!/bin/bash
# The deployment example end to end, short (examples/deploy.cpp): train the convnet on a subset,
# quantize, prune and fine-tune, export the int8 model; build examples/deploy_classify.c against the
# export and libfluxion_aot_rt.a with a plain C compiler; check with ldd that it loads no LLVM, MLIR
# or Fluxion library, and that the runtime it links is at most 200,000 bytes; run it on the exported
# test images; its classes must be those the exported function gave in process (expected.txt), and
# its accuracy above a floor.
# usage: check_deploy.sh path/to/deploy path/to/deploy_classify.c path/to/libfluxion_aot_rt.a
set -eu
deploy=$1 classify_c=$2 runtime=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
n=200
"$deploy" --epochs 1 --finetune-epochs 1 --limit 3072 --test-limit 500 --calibration-batches 2 --export-images $n \
  --out "$dir" > "$dir/log.txt" ||
  { status=$?; cat "$dir/log.txt"; exit $status; }
tr '\r' '\n' < "$dir/log.txt" | grep -v '^  \[' | tail -n 8
cc -O2 -std=c11 -I "$dir" "$classify_c" "$dir/fmnist_int8.o" "$runtime" -lstdc++ -lm -lmvec -lpthread -ldl \
  -Wl,-Map="$dir/link.map" -o "$dir/classify"
# The issue's size target for the runtime the int8 convnet links (docs/quantization.md): the
# archive's entries are split by family so that it links the int8 GEMM and convolution, float32
# pooling, and no Eigen.
python3 "$(dirname "$0")/../scripts/linked_size.py" "$dir/link.map" "$(basename "$runtime")" --max 200000 | tail -n 2
if ldd "$dir/classify" | grep -E 'LLVM|MLIR|fluxion'; then echo "the C program loads a Fluxion/LLVM library"; exit 1; fi
"$dir/classify" "$dir/test_images.u8" "$dir/test_labels.u8" $n > "$dir/c_out.txt"
tail -n 1 "$dir/c_out.txt"
head -n $n "$dir/c_out.txt" | diff -q - "$dir/expected.txt"
# The short run's int8 model classifies well above chance (a full run: docs/quantization.md).
awk '/^accuracy/ { exit !($2 >= 0.6) }' "$dir/c_out.txt"
