package dev.sluice.jvmtests.archive;

import java.io.File;
import java.io.IOException;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Pattern;
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
        int stack = loadConnectStack(loader);
        System.out.println("loaded the clients' and " + TOOLS.size() + " tools' classes, and " + stack
                           + " of Kafka Connect's stack");
    }

    /** Jars of a Connect worker's start (its runtime, REST server and JSON) and of the
     * connectors the tests run: few of their classes load before a broker answers. */
    private static final Pattern CONNECT_STACK = Pattern.compile(
        "(connect-|jetty-|jersey-|hk2-|jackson-|jakarta\\.|javassist-|aopalliance-|osgi-resource-locator-"
        + "|debezium-|log4j-).*\\.jar");

    /** Loads (without initialising) every class of the CONNECT_STACK jars, which the
     * archive then holds linked and verified: a worker's start maps them too (about a
     * third less CPU). A class that cannot load here (an optional dependency missing) is
     * left out. */
    private static int loadConnectStack(ClassLoader loader) throws IOException {
        int loaded = 0;
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!CONNECT_STACK.matcher(new File(entry).getName()).matches()) {
                continue;
            }
            try (JarFile jar = new JarFile(entry)) {
                for (JarEntry e : Collections.list(jar.entries())) {
                    String name = e.getName();
                    if (!name.endsWith(".class") || name.startsWith("META-INF/") || name.endsWith("module-info.class")
                        || name.endsWith("package-info.class")) {
                        continue;
                    }
                    try {
                        Class.forName(name.substring(0, name.length() - 6).replace('/', '.'), false, loader);
                        loaded++;
                    } catch (Throwable missingDependency) {
                        // Left out of the archive.
                    }
                }
            }
        }
        return loaded;
    }
}
