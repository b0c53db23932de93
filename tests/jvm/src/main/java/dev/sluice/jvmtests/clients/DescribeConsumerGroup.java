package dev.sluice.jvmtests.clients;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.common.GroupType;

/**
 * How AdminClient sees a group: DescribeConsumerGroup BOOTSTRAP GROUP
 *
 * Prints "group" (type, state, group epoch and target assignment epoch, as Kafka 4's
 * describeConsumerGroups reports them from ConsumerGroupDescribe, or from DescribeGroups
 * for a classic group), one "member" per member (id, member epoch, partitions assigned
 * and targeted), and "listed" with the groups listGroups returns for type CONSUMER and
 * for type CLASSIC (ListGroups v5's types filter).
 */
public final class DescribeConsumerGroup {
    private DescribeConsumerGroup() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String group = args[1];
        try (Admin admin = Admin.create(Out.props(bootstrap, "sluice-java-describe-group"))) {
            var d = Out.get(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group));
            var n = Out.line("group");
            n.put("type", d.type().toString());
            n.put("state", d.groupState().toString());
            n.put("group_epoch", d.groupEpoch().orElse(-1));
            n.put("target_assignment_epoch", d.targetAssignmentEpoch().orElse(-1));
            n.put("assignor", d.partitionAssignor());
            Out.emit(n);
            for (var m : d.members()) {
                var mn = Out.line("member");
                mn.put("member_id", m.consumerId());
                mn.put("client_id", m.clientId());
                mn.put("member_epoch", m.memberEpoch().orElse(-1));
                var arr = mn.putArray("partitions");
                new TreeSet<>(m.assignment().topicPartitions().stream().map(tp -> tp.partition()).toList())
                        .forEach(arr::add);
                var target = mn.putArray("target");
                m.targetAssignment().ifPresent(t -> new TreeSet<>(
                        t.topicPartitions().stream().map(tp -> tp.partition()).toList()).forEach(target::add));
                Out.emit(mn);
            }
            for (GroupType type : List.of(GroupType.CONSUMER, GroupType.CLASSIC)) {
                var listed = Out.get(admin.listGroups(new ListGroupsOptions().withTypes(Set.of(type))).all());
                var ln = Out.line("listed");
                ln.put("type", type.toString());
                var arr = ln.putArray("groups");
                for (var g : listed) {
                    var gn = arr.addObject();
                    gn.put("group_id", g.groupId());
                    gn.put("type", g.type().map(Object::toString).orElse(""));
                    gn.put("state", g.groupState().map(Object::toString).orElse(""));
                }
                Out.emit(ln);
            }
        }
    }
}
