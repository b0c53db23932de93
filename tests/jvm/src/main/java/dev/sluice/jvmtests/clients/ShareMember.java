package dev.sluice.jvmtests.clients;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One member of a share group (KafkaShareConsumer, KIP-932) with explicit
 * acknowledgement, subscribed to TOPIC until a line "stop" (or the end of stdin):
 * ShareMember BOOTSTRAP GROUP TOPIC NAME [KEY=VALUE]...
 *
 * What it does with a record depends on its value: "release-once..." is released at its
 * first delivery and accepted later, "reject..." is rejected, "poison..." is released at
 * every delivery (a record that always fails); anything else is accepted. Prints a
 * "record" line per delivery (offset, value, delivery count, what it did), a "commit"
 * line after each commitSync with the partitions that failed, and "closed".
 *
 * sluice.delay.ms=N sleeps N ms per record (so that several members share the work);
 * sluice.hold=true prints what it gets and then holds it without acknowledging until it
 * is killed (a consumer that dies with records locked).
 */
public final class ShareMember {
    private ShareMember() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String group = args[1];
        String topic = args[2];
        String name = args[3];
        Properties p = Out.props(bootstrap, "sluice-java-share-" + name);
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", "explicit");
        long delayMs = 0;
        boolean hold = false;
        List<String> rest = new ArrayList<>();
        for (String kv : Arrays.asList(args).subList(4, args.length)) {
            if (kv.startsWith("sluice.delay.ms=")) {
                delayMs = Long.parseLong(kv.substring("sluice.delay.ms=".length()));
            } else if (kv.equals("sluice.hold=true")) {
                hold = true;
            } else {
                rest.add(kv);
            }
        }
        Out.putAll(p, rest);
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (var in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null && !line.startsWith("stop")) {
                    // other lines are ignored
                }
            } catch (java.io.IOException e) {
                // end of stdin: stop as well
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        try (var consumer = new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            Out.emit(named("subscribed", name));
            while (!stop.get()) {
                var records = consumer.poll(Duration.ofMillis(200));
                for (var r : records) {
                    String value = Out.text(r.value());
                    AcknowledgeType ack = AcknowledgeType.ACCEPT;
                    short count = r.deliveryCount().orElse((short) 0);
                    if (value != null && value.startsWith("release-once") && count == 1) {
                        ack = AcknowledgeType.RELEASE;
                    } else if (value != null && value.startsWith("reject")) {
                        ack = AcknowledgeType.REJECT;
                    } else if (value != null && value.startsWith("poison")) {
                        ack = AcknowledgeType.RELEASE;
                    }
                    var n = ProducerCheck.record("record", r);
                    n.put("member", name);
                    n.put("delivery_count", count);
                    n.put("ack", hold ? "none" : ack.name());
                    Out.emit(n);
                    if (!hold) {
                        if (delayMs > 0) Thread.sleep(delayMs);
                        consumer.acknowledge(r, ack);
                    }
                }
                if (hold && !records.isEmpty()) {
                    Out.emit(named("holding", name));
                    while (true) Thread.sleep(1000);  // until killed
                }
                if (!records.isEmpty()) {
                    var result = consumer.commitSync(Duration.ofSeconds(Out.WAIT_SECONDS));
                    var n = named("commit", name);
                    var failed = n.putArray("failed");
                    result.forEach((tp, err) -> err.ifPresent(e -> failed.add(tp + ": " + e)));
                    Out.emit(n);
                }
            }
        }
        Out.emit(named("closed", name));
    }

    static com.fasterxml.jackson.databind.node.ObjectNode named(String kind, String name) {
        var n = Out.line(kind);
        n.put("member", name);
        return n;
    }
}
