#!/usr/bin/env python3
"""Every vLLM V1 point of data/validation/points.jsonl is replayed with the preset of its version:
`vllm` (async scheduling, the default since vLLM 0.14.0) for 0.14 and later, `vllm-0.13` for
earlier V1 versions and for points whose version is not stated, each of those with a
`sim_engine_evidence` (docs/SIMULATOR.md, "Thirty-second change"). Usage:
validation_vllm_versions_test.py POINTS.jsonl"""
import json
import re
import sys


def minor(version):
    m = re.search(r"v?0\.(\d+)\.", version)
    return int(m.group(1)) if m else None


def main():
    bad = []
    counts = {"vllm": 0, "vllm-0.13": 0}
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            p = json.loads(line)
            preset = p.get("sim_engine", p["engine"])
            if preset not in counts:
                continue
            counts[preset] += 1
            n = minor(p["engine_version"])
            if preset == "vllm" and (n is None or n < 14):
                bad.append(f"{p['id']}: vLLM {p['engine_version'][:40]!r} replayed with vllm "
                           "(async scheduling, 0.14 and later); give it vllm-0.13")
            if preset == "vllm-0.13":
                if n is not None and n >= 14:
                    bad.append(f"{p['id']}: vLLM 0.{n} replayed with vllm-0.13; give it vllm")
                if not p.get("sim_engine_evidence"):
                    bad.append(f"{p['id']}: vllm-0.13 without a sim_engine_evidence")
    if bad:
        sys.exit("\n".join(bad))
    if counts["vllm"] == 0 or counts["vllm-0.13"] == 0:
        sys.exit(f"expected points on both presets, found {counts}")
    print(f"ok: {counts}")


if __name__ == "__main__":
    main()
