package dev.sluice.jvmtests.clients;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * AdminClient on consumer groups: AdminGroups BOOTSTRAP TOPIC PARTITIONS PER_PARTITION GROUP
 *
 * A member of GROUP (classic protocol) consumes TOPIC (PARTITIONS partitions of
 * PER_PARTITION records each, set up by the test) and commits; while it is a member the
 * group is listed, described, its offsets listed, and deleting it or its offsets is
 * refused. Then, the member gone, its offsets are altered and some deleted, a new member
 * starts where they say, and the group is deleted.
 */
public final class AdminGroups {
    private AdminGroups() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        int perPartition = Integer.parseInt(args[3]);
        String group = args[4];
        try (Admin admin = Admin.create(Out.props(bootstrap, "sluice-java-admin-groups"))) {
            try (var member = member(bootstrap, group, topic, "first")) {
                consume(member, "first", (long) partitions * perPartition);
                member.commitSync(Duration.ofSeconds(Out.WAIT_SECONDS));
                listGroups(admin, "list-active", group);
                describe(admin, "describe-active", group);
                listOffsets(admin, "offsets-active", group);
                var n = Out.line("refused-while-active");
                n.put("delete_group", Out.errorOf(admin.deleteConsumerGroups(List.of(group)).all()));
                n.put("delete_offsets", Out.errorOf(admin.deleteConsumerGroupOffsets(group,
                        Set.of(new TopicPartition(topic, 0))).all()));
                n.put("alter_offsets", Out.errorOf(admin.alterConsumerGroupOffsets(group,
                        Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(1))).all()));
                Out.emit(n);
            }
            describe(admin, "describe-empty", group);
            var alter = Out.line("alter-offsets");
            alter.put("error", Out.errorOf(admin.alterConsumerGroupOffsets(group, Map.of(
                    new TopicPartition(topic, 0), new OffsetAndMetadata(3, "three"),
                    new TopicPartition(topic, 1), new OffsetAndMetadata(5))).all()));
            alter.put("error_unknown_partition", Out.errorOf(admin.alterConsumerGroupOffsets(group, Map.of(
                    new TopicPartition(topic, partitions + 10), new OffsetAndMetadata(1))).all()));
            Out.emit(alter);
            var del = Out.line("delete-offsets");
            del.put("error", Out.errorOf(admin.deleteConsumerGroupOffsets(group,
                    Set.of(new TopicPartition(topic, partitions - 1))).all()));
            Out.emit(del);
            listOffsets(admin, "offsets-altered", group);
            try (var member = member(bootstrap, group, topic, "second")) {
                consume(member, "second", (long) partitions * perPartition - 3 - 5 - (partitions - 3) * perPartition);
            }
            var gone = Out.line("delete-group");
            gone.put("error", Out.errorOf(admin.deleteConsumerGroups(List.of(group)).all()));
            gone.put("error_again", Out.errorOf(admin.deleteConsumerGroups(List.of(group)).all()));
            Out.emit(gone);
            listGroups(admin, "list-after-delete", group);
            describe(admin, "describe-after-delete", group);
        }
    }

    static KafkaConsumer<byte[], byte[]> member(String bootstrap, String group, String topic, String name) {
        Properties p = Out.props(bootstrap, "sluice-java-admin-member-" + name);
        p.put("group.id", group);
        p.put("group.protocol", "classic");
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        var c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        c.subscribe(List.of(topic));
        return c;
    }

    /** Polls until COUNT records came (bounded), printing the first offset read per partition. */
    static void consume(KafkaConsumer<byte[], byte[]> c, String name, long count) {
        Map<Integer, Long> first = new HashMap<>();
        long got = 0;
        long deadline = System.currentTimeMillis() + Out.WAIT_SECONDS * 1000;
        while (got < count && System.currentTimeMillis() < deadline) {
            for (var r : c.poll(Duration.ofMillis(500))) {
                first.putIfAbsent(r.partition(), r.offset());
                got++;
            }
        }
        var n = Out.line("consumed");
        n.put("member", name);
        n.put("count", got);
        var f = n.putObject("first_offsets");
        first.forEach((p, o) -> f.put(String.valueOf(p), o));
        Out.emit(n);
    }

    /** listGroups() with no filter, then as kafka-consumer-groups --list asks (consumer
     * groups only) and with a states filter. */
    static void listGroups(Admin admin, String kind, String group) throws Exception {
        listGroups(admin, kind, group, new ListGroupsOptions());
        listGroups(admin, kind + "-consumer", group, ListGroupsOptions.forConsumerGroups());
        listGroups(admin, kind + "-stable", group, new ListGroupsOptions().inGroupStates(Set.of(GroupState.STABLE)));
    }

    static void listGroups(Admin admin, String kind, String group, ListGroupsOptions options) throws Exception {
        var n = Out.line(kind);
        var f = admin.listGroups(options).all();
        n.put("error", Out.errorOf(f));
        var arr = n.putArray("groups");
        if (!n.get("error").isNull()) {
            Out.emit(n);
            return;
        }
        for (GroupListing g : Out.get(f)) {
            if (g.groupId().equals(group)) {
                var gn = arr.addObject();
                gn.put("group_id", g.groupId());
                gn.put("type", g.type().map(Enum::name).orElse(null));
                gn.put("protocol", g.protocol());
                gn.put("state", g.groupState().map(Enum::name).orElse(null));
                gn.put("simple", g.isSimpleConsumerGroup());
            }
        }
        Out.emit(n);
    }

    static void describe(Admin admin, String kind, String group) throws Exception {
        var n = Out.line(kind);
        var f = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group);
        n.put("error", Out.errorOf(f));
        if (n.get("error").isNull()) {
            ConsumerGroupDescription d = Out.get(f);
            n.put("state", d.groupState().name());
            n.put("assignor", d.partitionAssignor());
            n.put("simple", d.isSimpleConsumerGroup());
            n.put("coordinator", d.coordinator() == null ? -1 : d.coordinator().id());
            n.put("type", d.type().name());
            var members = n.putArray("members");
            for (MemberDescription m : d.members()) {
                var mn = members.addObject();
                mn.put("member_id", m.consumerId());
                mn.put("client_id", m.clientId());
                mn.put("host", m.host());
                mn.put("instance_id", m.groupInstanceId().orElse(null));
                var parts = mn.putArray("assignment");
                m.assignment().topicPartitions().stream()
                        .sorted((x, y) -> Integer.compare(x.partition(), y.partition()))
                        .forEach(tp -> parts.addArray().add(tp.topic()).add(tp.partition()));
            }
        }
        Out.emit(n);
    }

    static void listOffsets(Admin admin, String kind, String group) throws Exception {
        var n = Out.line(kind);
        var offsets = n.putObject("offsets");
        var got = Out.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
        got.forEach((tp, om) -> {
            var o = offsets.putObject(tp.topic() + ":" + tp.partition());
            o.put("offset", om == null ? -1 : om.offset());
            o.put("metadata", om == null ? null : om.metadata());
        });
        Out.emit(n);
    }
}
