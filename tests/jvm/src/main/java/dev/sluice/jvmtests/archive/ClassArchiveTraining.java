package dev.sluice.jvmtests.archive;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Loads the classes that the tests' JVM programs and Kafka's tools load when they start,
 * so that `make test-deps` can write them into a class-data-sharing archive
 * (scripts/jvm-class-archive, -XX:ArchiveClassesAtExit). Each later JVM of the tests maps
 * the archive instead of loading and verifying those classes again: a Kafka tool then
 * starts in about a third of the time.
 *
 * ClassArchiveTraining ADDRESS: ADDRESS is where no broker listens; the admin client,
 * producer and consumer are made, try to reach it for a moment and are closed.
 */
public final class ClassArchiveTraining {
    private ClassArchiveTraining() {}

    /** Main classes of kafka-tool's tools and of Kafka Connect's worker. */
    private static final List<String> TOOLS = List.of(
        "org.apache.kafka.tools.TopicCommand", "kafka.admin.ConfigCommand",
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
        "org.apache.kafka.tools.ConsoleProducer", "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "org.apache.kafka.tools.GetOffsetShell", "org.apache.kafka.tools.DeleteRecordsCommand",
        "org.apache.kafka.tools.AclCommand", "org.apache.kafka.tools.TransactionsCommand",
        "org.apache.kafka.tools.BrokerApiVersionsCommand", "org.apache.kafka.tools.LogDirsCommand",
        "org.apache.kafka.connect.cli.ConnectDistributed", "dev.sluice.jvmtests.tools.ToolRunner");

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: ClassArchiveTraining ADDRESS");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("request.timeout.ms", "300");
        props.put("default.api.timeout.ms", "300");
        props.put("max.block.ms", "300");
        props.put("reconnect.backoff.ms", "50");
        try (Admin admin = Admin.create(props)) {
            admin.listTopics().names().get(1, TimeUnit.SECONDS);
        } catch (Exception expected) {
            // Nothing listens: the attempt is what loads the network classes.
        }
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.send(new ProducerRecord<>("training", new byte[] {1})).get(1, TimeUnit.SECONDS);
        } catch (Exception expected) {
            // max.block.ms passes waiting for metadata.
        }
        Properties consumerProps = new Properties();
        consumerProps.putAll(props);
        consumerProps.put("group.id", "training");
        try (KafkaConsumer<byte[], byte[]> consumer =
                 new KafkaConsumer<>(consumerProps, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of("training"));
            consumer.poll(Duration.ofMillis(300));
        } catch (Exception expected) {
            // No coordinator to find.
        }
        ClassLoader loader = ClassArchiveTraining.class.getClassLoader();
        for (String tool : TOOLS) {
            Class.forName(tool, false, loader);
        }
        System.out.println("loaded the clients' and " + TOOLS.size() + " tools' classes");
    }
}
