#!/usr/bin/env bash
# The wheel by hand on a GPU machine (docs/python.md): installed with pip into a fresh virtual
# environment (torch from the Python on PATH, nothing from the network), then
# `stream_litmus.profile` and `stream-litmus trace --` each record examples/pytorch/wheel_smoke.py,
# and `assert_claims` judges side_stream.litmus on both recordings.
#   bash python/gpu_smoke.sh WHEEL [WORKDIR]
set -euo pipefail
wheel="$1"
work="${2:-$(mktemp -d)}"
root="$(cd "$(dirname "$0")/.." && pwd)"
# torch comes from the Python on PATH, which may itself be a virtual environment (then
# --system-site-packages would not reach it): its packages are added by a .pth file.
torch_site="$(python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
python3 -m venv --system-site-packages "$work/venv"
echo "$torch_site" > "$("$work/venv/bin/python3" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/torch-site.pth"
"$work/venv/bin/pip" install -q --no-index --no-deps "$wheel"
export PATH="$work/venv/bin:$PATH"
cd "$root/examples/pytorch"
echo "== stream-litmus: $(command -v stream-litmus)"
python3 wheel_smoke.py profile "$work/profiled.json.gz"
stream-litmus trace --out "$work/traced.json.gz" -- python3 wheel_smoke.py nvtx
python3 wheel_smoke.py judge "$work/profiled.json.gz" "$work/traced.json.gz"
stream-litmus explain "$work/profiled.json.gz" | tail -3
echo "== the wheel works on this GPU"
