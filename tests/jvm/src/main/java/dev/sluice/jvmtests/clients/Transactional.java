package dev.sluice.jvmtests.clients;

import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What a transactional producer gets from Sluice, which has no transactions:
 * Transactional BOOTSTRAP TRANSACTIONAL_ID MAX_BLOCK_MS. Prints "init" with the
 * exception initTransactions() throws (class, message, cause) and the time it took.
 */
public final class Transactional {
    private Transactional() {}

    public static void main(String[] args) {
        Properties p = Out.props(args[0], "sluice-java-transactional");
        p.put("transactional.id", args[1]);
        p.put("max.block.ms", args[2]);
        var n = Out.line("init");
        long start = System.nanoTime();
        try (var producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            producer.initTransactions();
            n.putNull("error");
        } catch (RuntimeException e) {
            n.put("error", e.getClass().getSimpleName());
            n.put("message", e.getMessage());
            n.put("cause", e.getCause() == null ? null : e.getCause().getClass().getSimpleName());
        }
        n.put("elapsed_ms", (System.nanoTime() - start) / 1_000_000);
        Out.emit(n);
    }
}
