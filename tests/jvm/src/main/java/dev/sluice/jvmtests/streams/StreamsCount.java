package dev.sluice.jvmtests.streams;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;

/**
 * A Kafka Streams application with processing.guarantee=exactly_once_v2: a stateful count
 * per key of INPUT, each new count written to OUTPUT (the record cache off, so every
 * input record gives one output record: key, count). Processing sleeps DELAY_MS per record
 * so that test_streams_eos.py can kill -9 it mid-way; it runs until killed or SECONDS
 * pass. Prints {"kind": "state", "state": ...} on each state change.
 *
 * <p>Usage: StreamsCount BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR DELAY_MS SECONDS
 */
public final class StreamsCount {
    private StreamsCount() {}

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // The killed instance's member is gone: the group notices within seconds.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
        long delay = Long.parseLong(args[5]);

        StreamsBuilder b = new StreamsBuilder();
        b.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
                .peek((k, v) -> sleep(delay))
                .groupByKey()
                .count(Materialized.<String, Long>as(
                        Stores.inMemoryKeyValueStore("counts")))
                .toStream()
                .mapValues(v -> Long.toString(v))
                .to(args[3], Produced.with(Serdes.String(), Serdes.String()));

        CountDownLatch done = new CountDownLatch(1);
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        streams.setStateListener((now, before) -> {
            System.out.println("{\"kind\":\"state\",\"state\":\"" + now + "\"}");
            System.out.flush();
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) done.countDown();
        });
        streams.start();
        done.await(Long.parseLong(args[6]), TimeUnit.SECONDS);
        streams.close(Duration.ofSeconds(10));
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
