package dev.sluice.jvmtests.clients;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One member of a consumer group (group.protocol=classic unless a KEY=VALUE says
 * group.protocol=consumer), subscribed to TOPIC, until a
 * line "stop" (or the end of stdin) arrives:
 * GroupMember BOOTSTRAP GROUP TOPIC NAME [KEY=VALUE]...
 *
 * Prints "assigned", "revoked" and "lost" (the partitions, the generation), "record" for
 * each record consumed (offsets committed synchronously after each poll), and "closed".
 * A line "close-leave" closes with an explicit LeaveGroup (a static member otherwise
 * stays in the group, which is what its restart relies on).
 */
public final class GroupMember {
    private GroupMember() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String group = args[1];
        String topic = args[2];
        String name = args[3];
        Properties p = Out.props(bootstrap, "sluice-java-member-" + name);
        p.put("group.id", group);
        p.put("group.protocol", "classic");
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        Out.putAll(p, Arrays.asList(args).subList(4, args.length));
        AtomicBoolean stop = new AtomicBoolean();
        AtomicBoolean leave = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (var in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null && !line.startsWith("stop") && !line.startsWith("close-leave")) {
                    // other lines are ignored
                }
                leave.set(line != null && line.startsWith("close-leave"));
            } catch (java.io.IOException e) {
                // end of stdin: stop as well
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        try (var consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                    event("revoked", name, parts, consumer);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    event("assigned", name, parts, consumer);
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> parts) {
                    event("lost", name, parts, consumer);
                }
            });
            while (!stop.get()) {
                var records = consumer.poll(Duration.ofMillis(200));
                for (var r : records) {
                    var n = ProducerCheck.record("record", r);
                    n.put("member", name);
                    Out.emit(n);
                }
                if (!records.isEmpty()) {
                    consumer.commitSync(Duration.ofSeconds(Out.WAIT_SECONDS));
                    var n = Out.line("committed");
                    n.put("member", name);
                    n.put("count", records.count());
                    // The generation, or with group.protocol=consumer the member epoch.
                    n.put("generation", consumer.groupMetadata().generationId());
                    Out.emit(n);
                }
            }
            consumer.close(leave.get()
                    ? CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                    : CloseOptions.timeout(Duration.ofSeconds(Out.WAIT_SECONDS)));
        }
        var n = Out.line("closed");
        n.put("member", name);
        Out.emit(n);
    }

    static void event(String kind, String name, Collection<TopicPartition> parts, KafkaConsumer<?, ?> c) {
        var n = Out.line(kind);
        n.put("member", name);
        var arr = n.putArray("partitions");
        new TreeSet<>(parts.stream().map(TopicPartition::partition).toList()).forEach(arr::add);
        n.put("generation", c.groupMetadata().generationId());
        n.put("member_id", c.groupMetadata().memberId());
        n.put("time_ms", System.currentTimeMillis());
        Out.emit(n);
    }
}
