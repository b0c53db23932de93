#!/usr/bin/env python3
"""The markdown summary of bench/vs-kafka.sh: medians over the rounds, Sluice/Kafka
ratios, the targets of the comparison met or missed, and every round's figures.

Input: the run's results.tsv, one figure per line: ROUND BROKER ROW KEY VALUE.
"""
import argparse
import collections
import statistics
import sys

ROWS = [
    ("broker", "broker start and memory"),
    ("p1", "flat-out produce, acks=1 (loadgen)"),
    ("pall", "flat-out produce, acks=all (loadgen)"),
    ("pjava", "flat-out produce, acks=all (kafka-producer-perf-test)"),
    ("steady", "steady produce, acks=all (loadgen)"),
    ("cons", "consume, warm cache (loadgen)"),
    ("consjava", "consume, warm cache (kafka-consumer-perf-test)"),
    ("parts-", "many partitions, acks=all, one connection per producer (loadgen)"),
    ("idemlz4", "idempotent lz4 JSON produce, acks=all (loadgen)"),
]
DURABILITY = {
    "p1": "both answer before fsync",
    "cons": "reads only",
    "consjava": "reads only",
    "broker": "",
}
ACKS_ALL = "Sluice: fsync before the ack; Kafka: page cache; Kafka fsync: fsync per append"
FIGURES = [  # key, label, better: "high" or "low"
    ("mbps", "MB/s", "high"),
    ("p50_ms", "p50 ms", "low"),
    ("p99_ms", "p99 ms", "low"),
    ("p999_ms", "p99.9 ms", "low"),
    ("cpu_s_per_gb", "broker CPU s/GB", "low"),
    ("client_cpu_s_per_gb", "load generator CPU s/GB", "low"),
    ("create_s", "create + first record in every partition, s", "low"),
    ("start_ms", "launch to first ack, ms", "low"),
    ("idle_rss_mb", "idle RSS MB", "low"),
    ("peak_rss_mb", "peak RSS MB", "low"),
]
BROKERS = ["sluice", "kafka", "kafka-fsync"]


def num(v):
    try:
        return float(v)
    except ValueError:
        return None


def fmt(x):
    if x is None:
        return "n/a"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--machine", default="")
    ap.add_argument("--setup", default="")
    a = ap.parse_args()

    # values[(row, key)][broker] = [per round...]
    values = collections.defaultdict(lambda: collections.defaultdict(list))
    rows_seen = []
    with open(a.results) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 5:
                continue
            _, broker, row, key, value = parts
            x = num(value)
            if x is None:
                continue
            values[(row, key)][broker].append(x)
            if row not in rows_seen:
                rows_seen.append(row)

    def med(row, key, broker):
        v = values.get((row, key), {}).get(broker)
        return statistics.median(v) if v else None

    out = []
    w = out.append
    w(f"Medians of {a.rounds} round(s); each ratio is Sluice's median over the other's.")
    if a.machine:
        w(f"Machine: {a.machine}.")
    if a.setup:
        w(f"Settings: `{a.setup}`.")
    w("")
    w("| row | figure | Sluice | Kafka | Sluice/Kafka | Kafka fsync | Sluice/Kafka fsync |")
    w("|---|---|---:|---:|---:|---:|---:|")
    ordered = []
    for prefix, _ in ROWS:
        ordered += [r for r in rows_seen if r == prefix or (prefix.endswith("-") and r.startswith(prefix))]
    for row in ordered:
        title = next(t for p, t in ROWS if row == p or (p.endswith("-") and row.startswith(p)))
        if row.startswith("parts-"):
            title = f"{row[6:]} partitions: " + title.replace("many partitions, ", "")
        first = True
        for key, label, _ in FIGURES:
            if (row, key) not in values:
                continue
            s, k, kf = (med(row, key, b) for b in BROKERS)
            name = f"**{title}**" if first else ""
            first = False
            w(f"| {name} | {label} | {fmt(s)} | {fmt(k)} | {fmt(ratio(s, k))} | {fmt(kf)} | "
              f"{fmt(ratio(s, kf))} |")
    w("")
    w("Durability: acks=1 rows, both brokers answer before any fsync. acks=all rows: "
      + ACKS_ALL + ".")
    w("")

    # The targets of the comparison.
    w("| target | row | measured | met |")
    w("|---|---|---:|---|")
    acks_all = [r for r in ordered if r not in ("broker", "p1", "cons", "consjava")]

    def target(name, row, x, ok):
        w(f"| {name} | {row} | {fmt(x)} | {'n/a' if x is None else ('yes' if ok(x) else 'no')} |")

    for row in ["p1"] + [r for r in ordered if r in ("cons", "consjava")]:
        if row in ordered:
            target("ahead of Kafka at equal durability (MB/s ratio > 1)", row,
                   ratio(med(row, "mbps", "sluice"), med(row, "mbps", "kafka")), lambda x: x > 1)
    flat_acks_all = [r for r in acks_all if r != "steady"]  # steady runs at a fixed rate
    for row in flat_acks_all:
        target("ahead of Kafka at equal durability: both fsync (MB/s ratio > 1)", row,
               ratio(med(row, "mbps", "sluice"), med(row, "mbps", "kafka-fsync")), lambda x: x > 1)
    for row in flat_acks_all:
        target("2x Kafka's throughput when both fsync (ratio >= 2)", row,
               ratio(med(row, "mbps", "sluice"), med(row, "mbps", "kafka-fsync")), lambda x: x >= 2)
    for row in [r for r in ordered if r != "broker"]:
        target("broker CPU per GB at most half of Kafka's (ratio <= 0.5)", row,
               ratio(med(row, "cpu_s_per_gb", "sluice"), med(row, "cpu_s_per_gb", "kafka")),
               lambda x: x <= 0.5)
    if "steady" in ordered:
        for b, label in (("kafka", "Kafka"), ("kafka-fsync", "Kafka fsync")):
            target(f"p99 at the steady rate no worse than {label}'s (ratio <= 1)", "steady",
                   ratio(med("steady", "p99_ms", "sluice"), med("steady", "p99_ms", b)),
                   lambda x: x <= 1)
    target("idle memory a tenth of Kafka's (ratio <= 0.1)", "broker",
           ratio(med("broker", "idle_rss_mb", "sluice"), med("broker", "idle_rss_mb", "kafka")),
           lambda x: x <= 0.1)
    w("")

    w("Every round (in round order):")
    w("")
    w("| row | figure | Sluice | Kafka | Kafka fsync |")
    w("|---|---|---|---|---|")
    for row in ordered:
        for key, label, _ in FIGURES:
            if (row, key) not in values:
                continue
            cells = [" / ".join(fmt(x) for x in values[(row, key)].get(b, [])) or "n/a"
                     for b in BROKERS]
            w(f"| {row} | {label} | " + " | ".join(cells) + " |")
    print("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
