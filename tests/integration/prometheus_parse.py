"""Parses Prometheus text (stdin) with prometheus_client's own parser and prints JSON
(stdout): {family: {"type": ..., "samples": [[name, labels, value], ...]}}, a family
keyed by the name of its TYPE line (the parser drops a counter's `_total`; it is put
back). Runs in tests/integration/.venv (requirements-pypi.txt), for test_metrics.py.
"""

import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    out = {}
    for fam in text_string_to_metric_families(sys.stdin.read()):
        name = fam.name + "_total" if fam.type == "counter" else fam.name
        samples = []
        for s in fam.samples:
            v = s.value
            samples.append([s.name, dict(s.labels), "NaN" if math.isnan(v) else v])
        out[name] = {"type": fam.type, "samples": samples}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
