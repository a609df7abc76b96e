#!/usr/bin/env bash
# On the GPU machine, from the repository's root (the bench's scripts and manifests are read from the tree), as root
# (Fashion-MNIST and the fortunes corpus go where the manifests read them):
#   tools/gpu_bundle/run.sh [BUNDLE] [STEPS] [MODELS] [REPEAT]
# Unpacks BUNDLE (default build/gpu_bundle.tar.xz, from pack.sh), then what ./dev gpu-check runs: the CUDA kernels'
# tests, the cuda conformance cases and nccl's tests (a skip there is a failure to look at), the default pipeline,
# the deblurring example and one epoch of the char transformer on the GPU in float32 and mixed_float16 (their test
# accuracy, PSNR and validation loss against the cpu's), and the GPU training bench (STEPS batches an epoch,
# default the whole epoch; STEPS 0 stops before the example runs and the bench; MODELS none stops before the
# bench). Logs and reports go to $OUT (default /tmp/ramjet-gpu). To spend less device time: EXAMPLES (a comma list
# of accuracy, deblur, transformer; default all three), PRECISIONS (default "float32 mixed_float16") and ROWS (the
# bench's --rows, default all).
set -uo pipefail
bundle=${1:-build/gpu_bundle.tar.xz}; steps=${2-}; models=${3:-cnn,resnet}; repeat=${4-}
examples=${EXAMPLES-accuracy,deblur,transformer}; precisions=${PRECISIONS-float32 mixed_float16}; rows=${ROWS-}
wanted() { case ",$examples," in *",$1,"*) return 0 ;; esac; return 1; }
OUT=${OUT:-/tmp/ramjet-gpu}; mkdir -p "$OUT"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
tar -C /tmp -xJf "$bundle"; b=/tmp/bundle
mkdir -p /usr/share/datasets/fashion-mnist && cp $b/data/*.gz /usr/share/datasets/fashion-mnist/
mkdir -p /usr/share/games/fortunes && cp $b/data/fortunes/*.u8 /usr/share/games/fortunes/
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader | tee "$OUT/gpu.txt"
find1() { find /opt /usr/local /usr/lib -name "$1" 2>/dev/null | head -1; }
lt=$(find1 'libcublasLt.so.13'); dnn=$(find1 'libcudnn.so.9'); nc=$(find1 'libnccl.so.2')
echo "cublasLt: $lt  cudnn: $dnn  nccl: $nc" | tee -a "$OUT/gpu.txt"
export LD_LIBRARY_PATH=$b/syslib:$(dirname "$lt"):$(dirname "$dnn"):$(dirname "$nc"):${LD_LIBRARY_PATH:-}
export RAMJET_TEST_PLUGIN_DIR=$b/lib/ramjet/plugins

stamp kernels
timeout 90 $b/bin/ramjet_cuda_tests > "$OUT/cuda_tests.txt" 2>&1; echo "kernels rc=$?"
grep -E '^\[  (FAILED|PASSED|SKIPPED) ' "$OUT/cuda_tests.txt" | head -20
stamp conformance
timeout 150 $b/bin/ramjet_conformance_tests --gtest_filter='*/cuda:NcclStrategy.*:CudaGraphs.*' > "$OUT/conformance.txt" 2>&1
echo "conformance rc=$?"
grep -E '^\[  (FAILED|PASSED|SKIPPED) |Failure|Which is|Expected|actual|error' "$OUT/conformance.txt" | head -60
[ "$steps" = 0 ] && exit 0

stamp accuracy  # the cpu's, for this pipeline in mixed_bfloat16: 0.9023 (docs/benchmarks.md)
wanted accuracy && for prec in $precisions; do
  timeout 150 $b/bin/ramjet run examples/fashion_mnist/train.json --quiet --set /train/backend=cuda \
    --set /train/precision=$prec --set /train/checkpoint/dir=/tmp/acc_$prec --set /export/path=/tmp/acc_$prec/m.tflite \
    --report "$OUT/accuracy_$prec.json" > "$OUT/accuracy_$prec.log" 2>&1; echo "accuracy $prec rc=$?"
  python3 -c "import json, sys; r = json.load(open(sys.argv[1])); print('eval', r.get('eval'))" "$OUT/accuracy_$prec.json"
done

stamp deblur  # the cpu's, float32: test PSNR 24.60-24.64 dB after these 3 epochs (docs/benchmarks.md)
wanted deblur && for prec in $precisions; do
  timeout 150 $b/bin/ramjet run examples/deblur/pipeline.json --quiet --set /train/backend=cuda \
    --set /train/precision=$prec --set /train/checkpoint/dir=/tmp/deblur_$prec \
    --set /export/path=/tmp/deblur_$prec/m.tflite --report "$OUT/deblur_$prec.json" > "$OUT/deblur_$prec.log" 2>&1
  echo "deblur $prec rc=$?"
  python3 -c "import json, sys; r = json.load(open(sys.argv[1])); print('eval', r.get('eval'))" "$OUT/deblur_$prec.json"
done
stamp transformer  # the cpu's, float32, this one epoch: validation loss in docs/benchmarks.md (the GPU section)
wanted transformer && for prec in $precisions; do
  d=/tmp/transformer_$prec; mkdir -p $d
  timeout 300 $b/bin/ramjet run examples/char_transformer/train.json --quiet --set /train/backend=cuda \
    --set /train/precision=$prec --set /train/epochs=1 --set /train/checkpoint/dir=$d \
    --set /data/train/source/vocabulary=$d/tokenizer.json --set /data/eval/source/vocabulary=$d/tokenizer.json \
    --report "$OUT/transformer_$prec.json" > "$OUT/transformer_$prec.log" 2>&1
  echo "transformer $prec rc=$?"; tail -2 "$OUT/transformer_$prec.log"
  python3 -c "import json, sys; r = json.load(open(sys.argv[1])); print('eval', r.get('eval'))" "$OUT/transformer_$prec.json"
done
[ "$models" = none ] && exit 0

stamp bench
PYTHONUNBUFFERED=1 timeout 300 python3 bench/train/run.py --ramjet $b/bin/ramjet --device cuda \
  ${steps:+--steps $steps} --model "$models" ${repeat:+--repeat $repeat} ${rows:+--rows $rows} --work /tmp/ramjet-gpu-bench > "$OUT/bench.txt" 2>&1
echo "bench rc=$?"; tail -30 "$OUT/bench.txt"
stamp done
