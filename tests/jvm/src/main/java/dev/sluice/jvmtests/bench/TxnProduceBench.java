package dev.sluice.jvmtests.bench;

import java.util.Arrays;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Flat-out produce with the Java producer, idempotent or transactional, for
 * bench/txn_bench.sh: TxnProduceBench BOOTSTRAP TOPIC MODE SECS RECORD_SIZE.
 *
 * <p>MODE is {@code idempotent} (acks=all, enable.idempotence=true, no transactions),
 * {@code txn-ms:N} (a transaction committed every N ms) or {@code txn-records:N} (a
 * transaction committed every N records). The producer's other settings are its
 * defaults (16 KiB batches, linger.ms 5, 5 requests in flight), so on a Kafka 4 broker
 * the transactional modes run on transaction version 2. A send's latency runs from the
 * send() call to its acknowledgement callback; a commit's from the call of
 * commitTransaction() (which first waits for the transaction's unacknowledged sends) to
 * its return. Prints one line: "RESULT records=.. elapsed_s=.. rps=.. mbps=.. p50_ms=..
 * p99_ms=.. commits=.. commit_p50_ms=.. commit_p99_ms=..", MB being 10^6 bytes of
 * record values.
 */
public final class TxnProduceBench {
    private TxnProduceBench() {}

    /** Latencies in ns, appended by the producer's I/O thread (the only writer). */
    static final class Lat {
        long[] v = new long[1 << 16];
        int n;

        void add(long ns) {
            if (n == v.length) v = Arrays.copyOf(v, n * 2);
            v[n++] = ns;
        }

        synchronized double pctMs(double p) {
            if (n == 0) return 0;
            long[] s = Arrays.copyOf(v, n);
            Arrays.sort(s);
            int i = (int) Math.min(n - 1, Math.ceil(p * n) - 1);
            return s[Math.max(0, i)] / 1e6;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: TxnProduceBench BOOTSTRAP TOPIC idempotent|txn-ms:N|txn-records:N"
                    + " SECS RECORD_SIZE");
            System.exit(2);
        }
        String mode = args[2];
        long secs = Long.parseLong(args[3]);
        int size = Integer.parseInt(args[4]);
        boolean txn = mode.startsWith("txn-");
        long everyMs = mode.startsWith("txn-ms:") ? Long.parseLong(mode.substring(7)) : 0;
        long everyRecords = mode.startsWith("txn-records:") ? Long.parseLong(mode.substring(12)) : 0;
        if (!txn && !mode.equals("idempotent") || txn && everyMs <= 0 && everyRecords <= 0) {
            System.err.println("TxnProduceBench: bad mode " + mode);
            System.exit(2);
        }

        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("client.id", "sluice-txn-bench");
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("max.block.ms", "60000");
        if (txn) p.put("transactional.id", "txn-bench-" + mode + "-" + System.nanoTime());
        byte[] value = new byte[size];
        new Random(42).nextBytes(value);
        Lat sends = new Lat();
        Lat commits = new Lat();
        long records = 0;
        long start;
        long elapsedNs;
        try (var producer = new KafkaProducer<byte[], byte[]>(p, new ByteArraySerializer(),
                     new ByteArraySerializer())) {
            if (txn) producer.initTransactions();
            // The first metadata fetch is not part of the run.
            producer.partitionsFor(args[1]);
            start = System.nanoTime();
            long deadline = start + secs * 1_000_000_000L;
            long txnStart = 0;
            long inTxn = 0;
            boolean open = false;
            while (true) {
                long now = System.nanoTime();
                if (open && (now >= deadline || everyMs > 0 && now - txnStart >= everyMs * 1_000_000L
                        || everyRecords > 0 && inTxn >= everyRecords)) {
                    long t0 = System.nanoTime();
                    producer.commitTransaction();
                    commits.add(System.nanoTime() - t0);
                    open = false;
                    now = System.nanoTime();
                }
                if (now >= deadline) break;
                if (txn && !open) {
                    producer.beginTransaction();
                    open = true;
                    txnStart = now;
                    inTxn = 0;
                }
                final long t0 = System.nanoTime();
                producer.send(new ProducerRecord<>(args[1], null, value), (md, e) -> {
                    if (e != null) {
                        System.err.println("TxnProduceBench: send failed: " + e);
                        System.exit(1);
                    }
                    synchronized (sends) {
                        sends.add(System.nanoTime() - t0);
                    }
                });
                records++;
                inTxn++;
            }
            producer.flush();
            elapsedNs = System.nanoTime() - start;
        }
        double el = elapsedNs / 1e9;
        System.out.printf("RESULT mode=%s records=%d elapsed_s=%.3f rps=%.0f mbps=%.2f p50_ms=%.2f p99_ms=%.2f"
                        + " commits=%d commit_p50_ms=%.2f commit_p99_ms=%.2f%n",
                mode, records, el, records / el, records * (double) size / 1e6 / el, sends.pctMs(0.50),
                sends.pctMs(0.99), commits.n, commits.pctMs(0.50), commits.pctMs(0.99));
    }
}
