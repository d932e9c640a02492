#!/usr/bin/env python3
"""Turn CLBlast tuner results into an RLX_CLBLAST_TUNING value.

Run CLBlast's tuners on the GPU (Debian package clblast-utils), e.g.
    clblast_tuner_xgemm -precision 32 -m 1024 -n 1024 -k 1024 -fraction 0.01
    clblast_tuner_xgemm_direct -precision 32 -m 1024 -n 1024 -k 1024 -fraction 0.02
then: export RLX_CLBLAST_TUNING="$(bench/clblast_tuning.py clblast_xgemm*_32.json)"
For each kernel the fastest configuration is taken; PRECISION is not a
parameter CLBlast lets one override."""
import json
import sys


def main():
    best = {}
    for path in sys.argv[1:]:
        for r in json.load(open(path))["results"]:
            k = r["kernel"]
            # The direct kernels share one parameter set ("XgemmDirect").
            k = "XgemmDirect" if k.startswith("XgemmDirect") else k
            if k not in best or r["time"] < best[k]["time"]:
                best[k] = r
    parts = []
    for k, r in sorted(best.items()):
        params = ",".join("%s=%d" % (n, v) for n, v in sorted(r["parameters"].items())
                          if n != "PRECISION")
        parts.append("%s:%s" % (k, params))
        print("%s: %.3f ms" % (k, r["time"]), file=sys.stderr)
    print(";".join(parts))


if __name__ == "__main__":
    main()
