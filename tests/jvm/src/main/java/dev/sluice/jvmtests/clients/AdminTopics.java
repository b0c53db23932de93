package dev.sluice.jvmtests.clients;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * AdminClient on topics, configs, records, offsets and the cluster, in the order a user
 * would call them: AdminTopics BOOTSTRAP PREFIX BASE_TIMESTAMP
 *
 * Topics PREFIX-a (3 partitions, retention.ms=3600000, max.message.bytes=200000) and
 * PREFIX-b (1 partition, 10 records at BASE_TIMESTAMP + 10 * i, the 7th at + 1000).
 * Each answer is one JSON line whose "kind" names the call; a failure is its exception's
 * simple class name in "error". With "--configs-of TOPIC" after BOOTSTRAP it only
 * describes TOPIC's configs.
 */
public final class AdminTopics {
    static final List<String> KEYS = List.of("retention.ms", "max.message.bytes", "cleanup.policy", "segment.bytes");

    private AdminTopics() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        if (args[1].equals("--configs-of")) {
            try (Admin admin = Admin.create(Out.props(bootstrap, "sluice-java-admin-configs"))) {
                describeConfigs(admin, "configs", args[2]);
            }
            return;
        }
        String a = args[1] + "-a";
        String b = args[1] + "-b";
        long base = Long.parseLong(args[2]);
        try (Admin admin = Admin.create(Out.props(bootstrap, "sluice-java-admin-topics"))) {
            createTopics(admin, a, b);
            listTopics(admin, "list-after-create", args[1]);
            describeTopic(admin, "describe", a);
            describeTopic(admin, "describe", "no-such-topic-" + args[1]);
            createPartitions(admin, a);
            describeTopic(admin, "describe-after-partitions", a);
            describeConfigs(admin, "configs", a);
            alterConfigs(admin, a);
            describeConfigs(admin, "configs-after-alter", a);
            describeBroker(admin);
            produce(bootstrap, b, base);
            listOffsets(admin, "offsets", new TopicPartition(b, 0), base);
            deleteRecords(admin, new TopicPartition(b, 0));
            listOffsets(admin, "offsets-after-delete", new TopicPartition(b, 0), base);
            describeCluster(admin);
            deleteTopics(admin, b, args[1]);
            listTopics(admin, "list-after-delete", args[1]);
        }
    }

    static void createTopics(Admin admin, String a, String b) throws Exception {
        NewTopic na = new NewTopic(a, 3, (short) 1).configs(Map.of("retention.ms", "3600000", "max.message.bytes", "200000"));
        var r = admin.createTopics(List.of(na, new NewTopic(b, 1, (short) 1)));
        for (String t : List.of(a, b)) {
            var n = Out.line("create");
            n.put("topic", t);
            n.put("error", Out.errorOf(r.values().get(t)));
            n.put("partitions", Out.get(r.numPartitions(t)));
            n.put("replication_factor", Out.get(r.replicationFactor(t)));
            n.put("topic_id", Out.get(r.topicId(t)).toString());
            var cfg = n.putObject("config");
            for (ConfigEntry e : Out.get(r.config(t)).entries()) {
                if (KEYS.contains(e.name())) {
                    cfg.put(e.name(), e.value());
                }
            }
            Out.emit(n);
        }
        List<NewTopic> bad = List.of(new NewTopic(a, 1, (short) 1), new NewTopic("bad name!", 1, (short) 1),
                new NewTopic(a + "-zero", 0, (short) 1),
                new NewTopic(a + "-badconfig", 1, (short) 1).configs(Map.of("retention.ms", "soon")));
        var rb = admin.createTopics(bad);
        for (NewTopic t : bad) {
            var n = Out.line("create-refused");
            n.put("topic", t.name());
            n.put("error", Out.errorOf(rb.values().get(t.name())));
            Out.emit(n);
        }
    }

    static void listTopics(Admin admin, String kind, String prefix) throws Exception {
        var n = Out.line(kind);
        var arr = n.putArray("topics");
        Out.get(admin.listTopics().names()).stream().filter(t -> t.startsWith(prefix)).sorted().forEach(arr::add);
        Out.emit(n);
    }

    static void describeTopic(Admin admin, String kind, String topic) throws Exception {
        var n = Out.line(kind);
        n.put("topic", topic);
        var f = admin.describeTopics(List.of(topic)).topicNameValues().get(topic);
        n.put("error", Out.errorOf(f));
        if (n.get("error").isNull()) {
            TopicDescription d = Out.get(f);
            n.put("internal", d.isInternal());
            n.put("topic_id", d.topicId().toString());
            var parts = n.putArray("partitions");
            for (var p : d.partitions()) {
                var pn = parts.addObject();
                pn.put("partition", p.partition());
                pn.put("leader", p.leader().id());
                p.replicas().forEach(r -> pn.withArray("replicas").add(r.id()));
                p.isr().forEach(r -> pn.withArray("isr").add(r.id()));
            }
        }
        Out.emit(n);
    }

    static void createPartitions(Admin admin, String topic) throws Exception {
        for (int count : new int[] {5, 2}) {
            var n = Out.line("create-partitions");
            n.put("count", count);
            n.put("error", Out.errorOf(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(count))).all()));
            Out.emit(n);
        }
    }

    static void describeConfigs(Admin admin, String kind, String topic) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        var config = Out.get(admin.describeConfigs(List.of(res)).all()).get(res);
        var n = Out.line(kind);
        n.put("count", config.entries().size());
        for (String key : KEYS) {
            ConfigEntry e = config.get(key);
            var en = n.putObject(key);
            en.put("value", e.value());
            en.put("source", e.source().name());
            en.put("default", e.isDefault());
            en.put("read_only", e.isReadOnly());
            en.put("sensitive", e.isSensitive());
        }
        Out.emit(n);
    }

    static void alterConfigs(Admin admin, String topic) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Collection<AlterConfigOp> ops = List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("max.message.bytes", ""), AlterConfigOp.OpType.DELETE),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND));
        var n = Out.line("alter");
        n.put("error", Out.errorOf(admin.incrementalAlterConfigs(Map.of(res, ops)).all()));
        for (var bad : List.of(new ConfigEntry("retention.ms", "later"), new ConfigEntry("no.such.config", "1"))) {
            var op = new AlterConfigOp(bad, AlterConfigOp.OpType.SET);
            n.put("error_" + bad.name(), Out.errorOf(admin.incrementalAlterConfigs(Map.of(res, List.of(op))).all()));
        }
        Out.emit(n);
    }

    static void describeBroker(Admin admin) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.BROKER, "0");
        var config = Out.get(admin.describeConfigs(List.of(res)).all()).get(res);
        var n = Out.line("broker-configs");
        var names = n.putArray("names");
        config.entries().stream().map(ConfigEntry::name).sorted().forEach(names::add);
        Out.emit(n);
    }

    static void produce(String bootstrap, String topic, long base) throws Exception {
        Properties p = Out.props(bootstrap, "sluice-java-admin-producer");
        try (var producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 10; i++) {
                long ts = i == 6 ? base + 1000 : base + 10L * i;
                Out.get(producer.send(new ProducerRecord<>(topic, 0, ts, "k" + i, "v" + i)));
            }
        }
    }

    static void listOffsets(Admin admin, String kind, TopicPartition tp, long base) throws Exception {
        var n = Out.line(kind);
        Map<String, OffsetSpec> specs = Map.of("earliest", OffsetSpec.earliest(), "latest", OffsetSpec.latest(),
                "max_timestamp", OffsetSpec.maxTimestamp(), "at_base_plus_35", OffsetSpec.forTimestamp(base + 35),
                "after_all", OffsetSpec.forTimestamp(base + 5000));
        for (var e : specs.entrySet()) {
            var info = Out.get(admin.listOffsets(Map.of(tp, e.getValue())).partitionResult(tp));
            var en = n.putObject(e.getKey());
            en.put("offset", info.offset());
            en.put("timestamp", info.timestamp());
        }
        Out.emit(n);
    }

    static void deleteRecords(Admin admin, TopicPartition tp) throws Exception {
        var n = Out.line("delete-records");
        var r = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(3))).lowWatermarks().get(tp);
        n.put("low_watermark", Out.get(r).lowWatermark());
        var beyond = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(100))).lowWatermarks().get(tp);
        n.put("error_beyond_end", Out.errorOf(beyond));
        Out.emit(n);
    }

    static void describeCluster(Admin admin) throws Exception {
        var r = admin.describeCluster();
        var n = Out.line("cluster");
        n.put("cluster_id", Out.get(r.clusterId()));
        n.put("controller", Out.get(r.controller()).id());
        var nodes = n.putArray("nodes");
        for (Node node : Out.get(r.nodes())) {
            var nn = nodes.addObject();
            nn.put("id", node.id());
            nn.put("host", node.host());
            nn.put("port", node.port());
        }
        Out.emit(n);
    }

    static void deleteTopics(Admin admin, String topic, String prefix) throws Exception {
        var n = Out.line("delete-topics");
        n.put("error", Out.errorOf(admin.deleteTopics(List.of(topic)).all()));
        n.put("error_missing", Out.errorOf(admin.deleteTopics(List.of("no-such-topic-" + prefix)).all()));
        Out.emit(n);
    }
}
