package dev.sluice.jvmtests.clients;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java producer with its defaults (idempotence, acks=all, five in flight), one
 * producer per topic with that topic's compression.type, then what came back:
 * ProducerCheck BOOTSTRAP SPEC.json
 *
 * SPEC: {"codecs": {topic: codec}, "records": [{topic, partition, key, value, headers:
 * [[k, v]], timestamp}], "partitions": {topic: n}, "times": [[topic, partition, ts]],
 * "describe_producers": false to leave DescribeProducers out (default true)}.
 * Prints "config" (the producer's effective settings), "sent" (each record's metadata,
 * in the order of the spec), "producers" (DescribeProducers per partition), "record"
 * (every record read back from the beginning by an assign()ed consumer), "time"
 * (offsetsForTimes and the record a seek there reads first).
 */
public final class ProducerCheck {
    private ProducerCheck() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        JsonNode spec = Out.JSON.readTree(new File(args[1]));
        List<TopicPartition> all = new ArrayList<>();
        spec.get("partitions").fields().forEachRemaining(e -> {
            for (int p = 0; p < e.getValue().asInt(); p++) {
                all.add(new TopicPartition(e.getKey(), p));
            }
        });
        var codecs = spec.get("codecs").fields();
        while (codecs.hasNext()) {
            var e = codecs.next();
            produce(bootstrap, e.getKey(), e.getValue().asText(), spec.get("records"));
        }
        if (!spec.has("describe_producers") || spec.get("describe_producers").asBoolean()) {
            describeProducers(bootstrap, all);
        }
        readBack(bootstrap, all, spec.get("times"));
    }

    static void produce(String bootstrap, String topic, String codec, JsonNode records) throws Exception {
        Properties p = Out.props(bootstrap, "sluice-java-producer-" + codec);
        p.put("compression.type", codec);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        ProducerConfig cfg = new ProducerConfig(Out.JSON.convertValue(p, Map.class));
        var c = Out.line("config");
        c.put("topic", topic);
        c.put("enable.idempotence", cfg.getBoolean("enable.idempotence"));
        c.put("acks", cfg.getString("acks"));
        c.put("max.in.flight.requests.per.connection", cfg.getInt("max.in.flight.requests.per.connection"));
        c.put("compression.type", cfg.getString("compression.type"));
        Out.emit(c);
        List<Integer> indexes = new ArrayList<>();
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (var producer = new KafkaProducer<byte[], byte[]>(p)) {
            for (int i = 0; i < records.size(); i++) {
                JsonNode r = records.get(i);
                if (!r.get("topic").asText().equals(topic)) {
                    continue;
                }
                RecordHeaders headers = new RecordHeaders();
                for (JsonNode h : r.get("headers")) {
                    headers.add(h.get(0).asText(), h.get(1).isNull() ? null : Out.bytes(h.get(1).asText()));
                }
                futures.add(producer.send(new ProducerRecord<>(topic, r.get("partition").asInt(),
                        r.get("timestamp").asLong(), textOrNull(r.get("key")), textOrNull(r.get("value")), headers)));
                indexes.add(i);
            }
            producer.flush();
            for (int j = 0; j < futures.size(); j++) {
                RecordMetadata md = Out.get(futures.get(j));
                var n = Out.line("sent");
                n.put("index", indexes.get(j));
                n.put("topic", md.topic());
                n.put("partition", md.partition());
                n.put("offset", md.offset());
                n.put("timestamp", md.timestamp());
                Out.emit(n);
            }
        }
    }

    static byte[] textOrNull(JsonNode n) {
        return n == null || n.isNull() ? null : Out.bytes(n.asText());
    }

    static void describeProducers(String bootstrap, List<TopicPartition> all) throws Exception {
        try (Admin admin = Admin.create(Out.props(bootstrap, "sluice-java-describe-producers"))) {
            var result = admin.describeProducers(all);
            for (TopicPartition tp : all) {
                for (ProducerState s : Out.get(result.partitionResult(tp)).activeProducers()) {
                    var n = Out.line("producers");
                    n.put("topic", tp.topic());
                    n.put("partition", tp.partition());
                    n.put("producer_id", s.producerId());
                    n.put("epoch", s.producerEpoch());
                    n.put("last_sequence", s.lastSequence());
                    n.put("last_timestamp", s.lastTimestamp());
                    n.put("coordinator_epoch", s.coordinatorEpoch().isPresent() ? s.coordinatorEpoch().getAsInt() : -1);
                    n.put("txn_start_offset", s.currentTransactionStartOffset().isPresent()
                            ? s.currentTransactionStartOffset().getAsLong() : -1);
                    Out.emit(n);
                }
            }
        }
    }

    static void readBack(String bootstrap, List<TopicPartition> all, JsonNode times) throws Exception {
        Properties p = Out.props(bootstrap, "sluice-java-reader");
        p.put("auto.offset.reset", "earliest");
        try (var consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(all);
            consumer.seekToBeginning(all);
            Map<TopicPartition, Long> end = consumer.endOffsets(all, Duration.ofSeconds(Out.WAIT_SECONDS));
            long deadline = System.currentTimeMillis() + Out.WAIT_SECONDS * 1000;
            while (!reached(consumer, end) && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    Out.emit(record("record", r));
                }
            }
            Map<TopicPartition, Long> query = new HashMap<>();
            for (JsonNode t : times) {
                query.put(new TopicPartition(t.get(0).asText(), t.get(1).asInt()), t.get(2).asLong());
            }
            var found = consumer.offsetsForTimes(query, Duration.ofSeconds(Out.WAIT_SECONDS));
            for (var e : query.entrySet()) {
                var n = Out.line("time");
                n.put("topic", e.getKey().topic());
                n.put("partition", e.getKey().partition());
                n.put("query", e.getValue());
                var at = found.get(e.getKey());
                n.put("offset", at == null ? -1 : at.offset());
                n.put("timestamp", at == null ? -1 : at.timestamp());
                if (at != null) {
                    consumer.assign(List.of(e.getKey()));
                    consumer.seek(e.getKey(), at.offset());
                    var first = pollOne(consumer);
                    n.put("first_offset", first == null ? -1 : first.offset());
                    n.put("first_timestamp", first == null ? -1 : first.timestamp());
                }
                Out.emit(n);
            }
        }
    }

    static boolean reached(KafkaConsumer<byte[], byte[]> c, Map<TopicPartition, Long> end) {
        for (var e : end.entrySet()) {
            if (c.position(e.getKey()) < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    static ConsumerRecord<byte[], byte[]> pollOne(KafkaConsumer<byte[], byte[]> c) {
        long deadline = System.currentTimeMillis() + Out.WAIT_SECONDS * 1000;
        while (System.currentTimeMillis() < deadline) {
            var rs = c.poll(Duration.ofMillis(500));
            if (!rs.isEmpty()) {
                return rs.iterator().next();
            }
        }
        return null;
    }

    static com.fasterxml.jackson.databind.node.ObjectNode record(String kind, ConsumerRecord<byte[], byte[]> r) {
        var n = Out.line(kind);
        n.put("topic", r.topic());
        n.put("partition", r.partition());
        n.put("offset", r.offset());
        n.put("key", Out.text(r.key()));
        n.put("value", Out.text(r.value()));
        Out.putHeaders(n, r.headers());
        n.put("timestamp", r.timestamp());
        n.put("timestamp_type", r.timestampType().name);
        return n;
    }
}
