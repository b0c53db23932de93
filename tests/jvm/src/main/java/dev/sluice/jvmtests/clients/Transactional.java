package dev.sluice.jvmtests.clients;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka transactions with the Java client: Transactional BOOTSTRAP MODE TOPIC TXN_ID [...].
 *
 * <ul>
 *   <li>commit-abort: three transactions of 10 records (commit, abort, commit), then a
 *       read_committed and a read_uncommitted consumer each print the values they read
 *       ("read" lines).
 *   <li>fence: an instance begins a transaction, a second instance of the same id starts;
 *       the first one's commit fails ("fenced" with the exception), the second commits.
 *   <li>rpw INPUT GROUP: a read-process-write loop: each polled batch of INPUT goes to
 *       TOPIC upper-cased in a transaction with sendOffsetsToTransaction; the third
 *       transaction is aborted and its batch processed again; prints the group's
 *       committed offset ("committed").
 *   <li>abortable: a transaction the test ends under its producer; the producer's next
 *       send gets TRANSACTION_ABORTABLE and it recovers by aborting ("open", "abortable").
 * </ul>
 */
public final class Transactional {
    private Transactional() {}

    static Properties producerProps(String bootstrap, String txnId) {
        Properties p = Out.props(bootstrap, "sluice-java-transactional");
        p.put("transactional.id", txnId);
        p.put("max.block.ms", "30000");
        return p;
    }

    static KafkaProducer<String, String> producer(String bootstrap, String txnId) {
        return new KafkaProducer<>(producerProps(bootstrap, txnId), new StringSerializer(),
                new StringSerializer());
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group, String iso) {
        Properties c = Out.props(bootstrap, "sluice-java-transactional-consumer");
        if (group != null) {
            c.put("group.id", group);
            c.put("max.poll.records", "5");  // several transactions from one backlog
        }
        c.put("isolation.level", iso);
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        return new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer());
    }

    static void readAll(String bootstrap, String topic, String iso) {
        var n = Out.line("read");
        n.put("isolation", iso);
        var values = n.putArray("values");
        try (var c = consumer(bootstrap, null, iso)) {
            var tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            long deadline = System.currentTimeMillis() + Out.WAIT_SECONDS * 1000;
            while (c.position(tp) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500)))
                    values.add(r.value());
            }
            n.put("end", end);
        }
        Out.emit(n);
    }

    static void commitAbort(String bootstrap, String topic, String txnId) {
        try (var p = producer(bootstrap, txnId)) {
            p.initTransactions();
            String[] kinds = {"c1", "ab", "c2"};
            for (String k : kinds) {
                p.beginTransaction();
                for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(topic, 0, null, k + "-" + i));
                if (k.equals("ab")) {
                    p.flush();
                    p.abortTransaction();
                } else {
                    p.commitTransaction();
                }
            }
        }
        readAll(bootstrap, topic, "read_committed");
        readAll(bootstrap, topic, "read_uncommitted");
    }

    static void fence(String bootstrap, String topic, String txnId) {
        try (var first = producer(bootstrap, txnId)) {
            first.initTransactions();
            first.beginTransaction();
            first.send(new ProducerRecord<>(topic, 0, null, "zombie"));
            first.flush();
            try (var second = producer(bootstrap, txnId)) {
                second.initTransactions();
                var n = Out.line("fenced");
                try {
                    first.send(new ProducerRecord<>(topic, 0, null, "zombie-2"));
                    first.commitTransaction();
                    n.putNull("error");
                } catch (RuntimeException e) {
                    n.put("error", e.getClass().getSimpleName());
                    n.put("message", e.getMessage());
                }
                Out.emit(n);
                second.beginTransaction();
                second.send(new ProducerRecord<>(topic, 0, null, "winner"));
                second.commitTransaction();
            }
        } catch (RuntimeException e) {
            // Closing the fenced instance may throw again; the facts are printed.
        }
        readAll(bootstrap, topic, "read_committed");
    }

    static void readProcessWrite(String bootstrap, String topic, String txnId, String input,
                                 String group, int total) {
        int done = 0;
        int txns = 0;
        try (var p = producer(bootstrap, txnId);
                var c = consumer(bootstrap, group, "read_committed")) {
            p.initTransactions();
            c.subscribe(List.of(input));
            long deadline = System.currentTimeMillis() + Out.WAIT_SECONDS * 1000;
            while (done < total && System.currentTimeMillis() < deadline) {
                var records = c.poll(Duration.ofMillis(500));
                if (records.isEmpty()) continue;
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    p.send(new ProducerRecord<>(topic, 0, r.key(), r.value().toUpperCase()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()),
                            new OffsetAndMetadata(r.offset() + 1));
                }
                p.sendOffsetsToTransaction(offsets, c.groupMetadata());
                if (++txns == 3) {
                    // Aborted once its outputs are in the partition: they stay unread
                    // (ABORT marker) and its input is read again.
                    p.flush();
                    p.abortTransaction();
                    for (var e : offsets.entrySet()) {
                        long first = Long.MAX_VALUE;
                        for (var r : records.records(e.getKey())) first = Math.min(first, r.offset());
                        c.seek(e.getKey(), first);
                    }
                    continue;
                }
                p.commitTransaction();
                done += records.count();
            }
            var n = Out.line("committed");
            Set<TopicPartition> tps = c.assignment();
            for (var e : c.committed(tps).entrySet())
                n.put(e.getKey().toString(), e.getValue() == null ? -1 : e.getValue().offset());
            n.put("transactions", txns);
            Out.emit(n);
        }
        readAll(bootstrap, topic, "read_committed");
    }

    /**
     * A transaction ended under its producer: the test ends it at the coordinator (a raw
     * EndTxn with the producer's id and epoch, printed in the "open" line) and writes a
     * line to stdin; the producer's next send to its partition (Produce v11 on transaction
     * version 1) is answered TRANSACTION_ABORTABLE, and the producer recovers by aborting.
     */
    static void abortable(String bootstrap, String topic, String txnId) throws Exception {
        try (var p = producer(bootstrap, txnId);
                var admin = Admin.create(Out.props(bootstrap, "sluice-java-transactional-admin"))) {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, null, "lost-1"));
            p.flush();
            var d = Out.get(admin.describeTransactions(List.of(txnId)).description(txnId));
            var open = Out.line("open");
            open.put("producer_id", d.producerId());
            open.put("producer_epoch", d.producerEpoch());
            Out.emit(open);
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            var n = Out.line("abortable");
            try {
                Out.get(p.send(new ProducerRecord<>(topic, 0, null, "lost-2")));
                n.putNull("send");
            } catch (ExecutionException e) {
                n.put("send", e.getCause().getClass().getSimpleName());
            }
            try {
                p.commitTransaction();
                n.putNull("commit");
            } catch (RuntimeException e) {
                n.put("commit", e.getClass().getSimpleName());
            }
            p.abortTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, null, "kept-1"));
            p.commitTransaction();
            Out.emit(n);
        }
        readAll(bootstrap, topic, "read_committed");
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        switch (args[1]) {
            case "commit-abort" -> commitAbort(bootstrap, args[2], args[3]);
            case "fence" -> fence(bootstrap, args[2], args[3]);
            case "abortable" -> abortable(bootstrap, args[2], args[3]);
            case "rpw" -> readProcessWrite(bootstrap, args[2], args[3], args[4], args[5],
                    Integer.parseInt(args[6]));
            default -> throw new IllegalArgumentException(args[1]);
        }
    }
}
