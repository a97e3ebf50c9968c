#!/bin/bash
# The resume test of examples/resnet.cpp --checkpoint: a run stopped after epoch 1 and started again
# from its checkpoint must end as the uninterrupted run does -- the same epoch-2 train loss and test
# accuracy (the loader reshuffles epoch 2 as it would have, the optimizer's step count and the batch
# statistics come back with the parameters). usage: check_resume.sh path/to/resnet
set -eu
resnet=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export FLUXION_CACHE_DIR=$dir/cache  # the three runs compile the same two programs once
run=(--epochs 2 --limit 512)
epoch2() { tr '\r' '\n' < "$1" | grep '^  epoch 2:' | sed 's/, [0-9.]*s$//'; }

"$resnet" "${run[@]}" > "$dir/whole.txt"
"$resnet" "${run[@]}" --checkpoint "$dir/ck.safetensors" --stop-after 1 > "$dir/first.txt"
grep -q 'stopped after epoch 1' "$dir/first.txt"
"$resnet" "${run[@]}" --checkpoint "$dir/ck.safetensors" > "$dir/resumed.txt"
grep -q 'resumed from .* after epoch 1' "$dir/resumed.txt"
whole=$(epoch2 "$dir/whole.txt") resumed=$(epoch2 "$dir/resumed.txt")
echo "uninterrupted: $whole"
echo "resumed:       $resumed"
[ -n "$whole" ] && [ "$whole" = "$resumed" ]
